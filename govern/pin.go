package govern

// Pin is a script the analyzer read and judged, held to those bytes: the
// run executes exactly them (the sandbox binds them over the path; in mode
// none they are hashed again just before the start). One type from the
// analysis through the plan to the sandbox's spec.
type Pin struct {
	Path     string `json:"path"`     // absolute path as the command names it
	RealPath string `json:"realpath"` // after symlink resolution
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	Dialect  string `json:"dialect,omitempty"` // bash or sh when analysed, empty otherwise
	// Bytes are what runs. They are never serialised with the analysis or
	// the audit record; the sandbox's wire form (sandbox.Spec) carries
	// them to its helper.
	Bytes []byte `json:"-"`
}
