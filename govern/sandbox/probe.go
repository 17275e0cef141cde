package sandbox

// Check is one prerequisite of the Linux backend, with why it failed and
// what fixes it.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason,omitempty"`
	Remedy string `json:"remedy,omitempty"`
}

// Probe check names.
const (
	CheckBubblewrap     = "bubblewrap"
	CheckUserNamespaces = "user_namespaces"
	CheckSeccomp        = "seccomp"
	CheckCgroups        = "cgroups"
)

// ProbeReport is what this host can enforce. FullStrength (bubblewrap,
// user namespaces and the seccomp stage) is what sandbox_mode bubblewrap
// needs; the cgroups check only decides how memory and process limits are
// held (cgroup, or rlimits per process).
type ProbeReport struct {
	BwrapPath    string  `json:"bwrap_path,omitempty"`
	BwrapVersion string  `json:"bwrap_version,omitempty"`
	Checks       []Check `json:"checks"`
	FullStrength bool    `json:"full_strength"`
}

// Check returns the named check.
func (r ProbeReport) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}
