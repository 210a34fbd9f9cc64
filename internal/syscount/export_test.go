package syscount

// The unexported steps of ForThread, for the external tests (which use
// internal/testenv, itself a user of this package).
var (
	PrivateTracepointID = privateTracepointID
	TracepointID        = tracepointID
	TracefsRoots        = tracefsRoots
	Open                = open
)
