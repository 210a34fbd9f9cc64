package pcapfilter

import (
	"fmt"

	"github.com/packetio/packetio"
)

// Error is why an expression did not compile.
type Error struct {
	// Expr is the expression.
	Expr string
	// Column is the 1-based byte column the problem was found at (one past
	// the end for a premature end), or 0 when it concerns the whole
	// expression.
	Column int
	// Msg says what is wrong.
	Msg string

	unsupported bool // valid tcpdump that this package does not implement
	invalid     bool // refused on purpose: the empty expression
}

// Error formats the problem as "pcapfilter: column N: MSG".
func (e *Error) Error() string {
	if e.Column == 0 {
		return "pcapfilter: " + e.Msg
	}
	return fmt.Sprintf("pcapfilter: column %d: %s", e.Column, e.Msg)
}

// Unwrap returns packetio.ErrUnsupported when the expression is valid
// tcpdump syntax this package does not implement (host and port names,
// protochain, 802.11 and the other link types, ...), packetio.ErrInvalid
// for the empty expression CompileMatch refuses, and nil for an expression
// that is wrong.
func (e *Error) Unwrap() error {
	switch {
	case e.unsupported:
		return packetio.ErrUnsupported
	case e.invalid:
		return packetio.ErrInvalid
	}
	return nil
}

// errAt is an error at byte offset pos.
func errAt(pos int, format string, args ...any) *Error {
	return &Error{Column: pos + 1, Msg: fmt.Sprintf(format, args...)}
}

// unsupportedAt is errAt for a feature this package lacks.
func unsupportedAt(pos int, format string, args ...any) *Error {
	e := errAt(pos, format, args...)
	e.unsupported = true
	return e
}
