//go:build !linux

package sandbox

// DelegateCgroup does nothing: cgroups are Linux only.
func DelegateCgroup() CgroupDelegation {
	return CgroupDelegation{Detail: "no cgroups: " + ErrUnsupported.Error()}
}
