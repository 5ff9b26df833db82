package proxy

import (
	"regexp"

	"github.com/mcpkeep/mcpkeep/transport"
)

var (
	// urlInText finds the URLs in an error's text.
	urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	// bearerInText finds a bearer credential quoted in an error.
	bearerInText = regexp.MustCompile(`(?i)(bearer\s+)[^\s"']+`)
)

// redactText is an error's text as the live page shows it: every URL in
// it with its credentials and secret-looking query values replaced, as
// the logs do (transport.RedactURL; docs/design.md §10), and a bearer
// credential's value replaced.
func redactText(s string) string {
	s = urlInText.ReplaceAllStringFunc(s, transport.RedactURL)
	return bearerInText.ReplaceAllString(s, "${1}***")
}
