// Package transport opens one fresh connection per generation for the
// mcpkeep supervisor and proves when it is gone (the close barrier).
//
// An Opener yields a Generation: the mcp.Transport to connect with, a Gone
// channel that closes when every resource behind it is released, and
// Terminate, which escalates the teardown. Implementations: stdio (the
// supervisor owns the child and its process group), Streamable HTTP, and a
// scripted in-memory transport with faults for tests.
//
// Stdio owns its server's process (DESIGN §8). Each generation is a fresh
// exec.Cmd in its own process group (so a terminal's Ctrl-C reaches
// mcpkeep, which tears the server down, and not the server), with stdin,
// stdout and stderr on os.Pipes handed to mcp.IOTransport;
// mcp.CommandTransport is not used
// because it sees an exit only as stdout EOF, which a grandchild (npx, uvx,
// a shell wrapper) holding stdout delays indefinitely, and it signals only
// the direct child. A goroutine of mcpkeep reaps the child; the moment it is
// reaped, reads of stdout stop waiting for writers: what the child wrote is
// still delivered, then the SDK sees EOF (about a millisecond later, even
// with a grandchild holding the pipe). Teardown starts on Terminate or on
// the child's own exit: close stdin, StdinGrace, SIGTERM to the group,
// TermGrace, SIGKILL to the group, KillGrace. Gone closes once the child is
// reaped and no live process is left in its group (polled: the OS has no
// event for it; on Linux a zombie member counts as gone, since init may reap
// orphans only every few seconds). A group that never empties leaves Gone
// open, but every goroutine of the generation still ends within
// TerminationWindow, except the one reaping a child that survives SIGKILL.
// Processes that leave the group (setsid, as some npx children do) are out
// of reach. The last stderr lines are kept for Exit().StderrTail and
// forwarded at Debug.
package transport
