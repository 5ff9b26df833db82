// Package oauth signs mcpkeep in to remote MCP servers that require the
// MCP authorization flow (docs/design.md §22): protected resource
// metadata, authorization server discovery, dynamic client registration or
// a configured client, PKCE, the authorization code, and refresh.
//
// The flow itself is the go-sdk's (auth.AuthorizationCodeHandler); this
// package supplies what the SDK leaves to its caller:
//
//   - the person's step (Login): print the authorization URL, open a
//     browser where there is one, and take the redirect on a loopback port,
//     or the redirected URL pasted at the prompt where no browser can reach
//     the machine;
//   - the token store (Store): one file per server URL and client, in the
//     user's config directory, 0600, written atomically, safe to share
//     between processes: every write and refresh holds the entry's file
//     lock, and writes are compare-and-swap (docs/design.md §22);
//   - the handler a supervised transport uses (Handler): it sends the
//     stored token, refreshes it before it expires and when the server
//     rejects it, saves what the refresh returns, and never starts a
//     sign-in that needs a person. When only a person can help (no token,
//     the refresh refused, a rejected token that cannot be renewed) it
//     reports transport.ErrSignInRequired, naming the command to run, and
//     the supervisor stops in exhausted at once;
//   - Status and Logout for `mcpkeep auth status|logout`, and Watch, which
//     tells a running proxy that a sign-in stored a new token.
//
// Tokens and client secrets never appear in logs, traces, errors or
// anything this package prints. The package is a library: no CLI
// framework, no metrics.
package oauth
