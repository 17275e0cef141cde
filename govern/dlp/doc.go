// Package dlp redacts what a command printed before anything reaches the
// agent: every injected credential value in each of the forms it can be
// printed in (credentials.go), streaming, so a value split across two
// reads is still caught.
package dlp
