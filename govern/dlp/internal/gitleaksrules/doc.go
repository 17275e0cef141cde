// Package gitleaksrules loads gitleaks' default rule set the way gitleaks
// does and writes the rules that can judge output as a Go table for
// package dlp, so that dlp needs neither gitleaks nor viper at run time.
package gitleaksrules
