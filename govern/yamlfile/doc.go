// Package yamlfile reads one YAML document strictly into a wire struct and
// reports every problem as one line naming the file, line:column and field
// path, so that config and policy files fail the same way.
package yamlfile
