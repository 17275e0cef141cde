package sandbox

// CgroupDelegation is what DelegateCgroup found or did with the caller's
// cgroup v2: whether the run cgroups that sandboxes make get the memory
// and pids controllers, and where they are made.
type CgroupDelegation struct {
	// Delegated: run cgroups made under Dir have Controllers.
	Delegated bool `json:"delegated"`
	// Moved: the caller now runs in Leaf (this call moved it).
	Moved bool `json:"moved"`
	// Dir is the caller's delegated cgroup ("" when unknown).
	Dir string `json:"dir,omitempty"`
	// Leaf is the child of Dir the caller runs in, when it moved.
	Leaf        string   `json:"leaf,omitempty"`
	Controllers []string `json:"controllers,omitempty"`
	// Detail says what happened, or why nothing did, for the log and doctor.
	Detail string `json:"detail"`
}
