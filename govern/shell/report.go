package shell

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteReport prints the analysis for a person: one row per command, then
// pins, write-then-run links, flags and the denial.
func (a *Analysis) WriteReport(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dialect %s, judged text sha256 %s\n", a.Dialect, a.SHA256)
	if len(a.Commands) > 0 {
		fmt.Fprintln(tw, "\nPOS\tKIND\tCONTEXT\tCOMMAND")
		for _, c := range a.Commands {
			ctx := c.Context
			if ctx == "" {
				ctx = "-"
			}
			line := argvString(c.Argv)
			if len(c.Wrappers) > 0 {
				line = "[" + strings.Join(c.Wrappers, " > ") + "] " + line
			}
			if c.Opaque != "" {
				line += "   (opaque: " + c.Opaque + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Pos, c.Kind, ctx, line)
		}
	}
	if len(a.Pins) > 0 {
		fmt.Fprintln(tw, "\nPINNED SCRIPT\tSHA256\tSIZE\tDIALECT")
		for _, p := range a.Pins {
			d := p.Dialect
			if d == "" {
				d = "(not analysed)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.Path, p.SHA256, p.Size, d)
		}
	}
	if len(a.Links) > 0 {
		fmt.Fprintln(tw, "\nWRITTEN THEN RUN\tWRITE\tRUN")
		for _, l := range a.Links {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Path, l.Write, l.Run)
		}
	}
	if len(a.Flags) > 0 {
		fmt.Fprintln(tw, "\nFLAG\tPOS\tDETAIL")
		for _, f := range a.Flags {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Kind, f.Pos, f.Detail)
		}
	}
	if a.Denial != nil {
		fmt.Fprintf(tw, "\nDENIED %s at %s: %s\n", a.Denial.Reason, a.Denial.Pos, a.Denial.Message)
	}
	return tw.Flush()
}

// argvString quotes each word for display; dynamic words are shown as their
// source text in ⟨ ⟩.
func argvString(argv []Word) string {
	parts := make([]string, len(argv))
	for i, w := range argv {
		switch {
		case w.Dynamic:
			parts[i] = "⟨" + w.Value + "⟩"
		case w.Value == "" || strings.ContainsAny(w.Value, " \t\n'\"\\$`|&;<>(){}*?[]#~"):
			parts[i] = "'" + strings.ReplaceAll(w.Value, "'", `'\''`) + "'"
		default:
			parts[i] = w.Value
		}
	}
	return strings.Join(parts, " ")
}
