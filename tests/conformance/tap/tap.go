// Package tap writes Test Anything Protocol (version 13) streams.
//
// It provides the small API the OCI runtime-tools validation programs use
// (they import it as github.com/mndrix/tap-go); the conformance build links
// this directory in at that import path, so the suite builds without network.
package tap

import (
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v2"
)

// T is one TAP stream. Test numbers start at 1 and grow with every result.
type T struct {
	// Shared with the views Todo returns, so numbering stays in one sequence.
	nextTest *int
	// TODO marks results written through this value as "# TODO".
	TODO bool
	// Writer receives the stream; New sets it to standard output.
	Writer io.Writer
}

// New returns a stream on standard output.
func New() *T {
	next := 1
	return &T{nextTest: &next, Writer: os.Stdout}
}

func (t *T) printf(format string, a ...interface{}) {
	w := t.Writer
	if w == nil {
		w = os.Stdout
	}
	fmt.Fprintf(w, format, a...)
}

// Header starts the stream; a positive count also announces the plan.
func (t *T) Header(testCount int) {
	t.printf("TAP version 13\n")
	if testCount > 0 {
		t.printf("1..%d\n", testCount)
	}
}

// Ok records one result.
func (t *T) Ok(test bool, description string) {
	status := "ok"
	if !test {
		status = "not ok"
	}
	directive := ""
	if t.TODO {
		directive = " # TODO"
	}
	t.printf("%s %d - %s%s\n", status, *t.nextTest, oneLine(description), directive)
	*t.nextTest++
}

// Pass records a passing result.
func (t *T) Pass(description string) { t.Ok(true, description) }

// Fail records a failing result.
func (t *T) Fail(description string) { t.Ok(false, description) }

// Skip records count skipped results with the same reason.
func (t *T) Skip(count int, description string) {
	for i := 0; i < count; i++ {
		t.printf("ok %d # SKIP %s\n", *t.nextTest, oneLine(description))
		*t.nextTest++
	}
}

// Todo returns a view of the stream whose results are marked "# TODO";
// numbering stays shared with t.
func (t *T) Todo() *T {
	view := *t
	view.TODO = true
	return &view
}

// Count is the number of results written so far.
func (t *T) Count() int { return *t.nextTest - 1 }

// AutoPlan writes the plan line for the results written so far; call it last.
func (t *T) AutoPlan() {
	t.printf("1..%d\n", t.Count())
}

// Diagnostic writes a comment; each line of message becomes its own "# " line.
func (t *T) Diagnostic(message string) {
	t.printf("# %s\n", strings.ReplaceAll(strings.TrimRight(message, "\n"), "\n", "\n# "))
}

// Diagnosticf is Diagnostic with formatting.
func (t *T) Diagnosticf(format string, a ...interface{}) {
	t.Diagnostic(fmt.Sprintf(format, a...))
}

// YAML attaches a YAML block to the previous result.
func (t *T) YAML(message interface{}) error {
	out, err := yaml.Marshal(message)
	if err != nil {
		return err
	}
	t.printf("  ---\n")
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		t.printf("  %s\n", line)
	}
	t.printf("  ...\n")
	return nil
}

// A description spanning lines would break the stream's line structure.
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", " ")
}
