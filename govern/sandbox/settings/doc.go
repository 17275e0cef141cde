// Package settings reads exec.sandbox.settings_file, a sandbox-runtime
// settings file, strictly, and keeps only what narrows the sandbox.
package settings
