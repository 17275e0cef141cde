package framework

import (
	"errors"
	"fmt"
)

// ErrPayload is wrapped by every error Parse returns, so a caller can tell a
// refused payload from anything else with errors.Is.
var ErrPayload = errors.New("hook payload refused")

// PayloadError names what is wrong with a payload: the field (a dotted path
// such as "tool_input.command", empty for the payload as a whole) and the
// problem.
type PayloadError struct {
	Framework Name
	Field     string
	Problem   string
}

func (e *PayloadError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s hook payload: %s", e.Framework, e.Problem)
	}
	return fmt.Sprintf("%s hook payload: %s: %s", e.Framework, e.Field, e.Problem)
}

// Unwrap makes every PayloadError match ErrPayload.
func (e *PayloadError) Unwrap() error { return ErrPayload }
