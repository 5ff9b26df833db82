package main

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mcpkeep/mcpkeep/tools"
)

// defaultName is the server's name from its command or URL, made a valid
// server name (tools.CheckServerName).
func defaultName(u string, command []string) string {
	base := ""
	if u != "" {
		if pu, err := url.Parse(u); err == nil {
			base = pu.Hostname()
		}
	} else {
		base = filepath.Base(command[0])
		// npx/uvx/node wrappers: the package names the server better.
		for _, a := range command[1:] {
			if !strings.HasPrefix(a, "-") && (base == "npx" || base == "uvx" || base == "node" || base == "bunx" || base == "pnpm") {
				base = filepath.Base(a)
				break
			}
		}
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	for strings.Contains(n, "--") {
		n = strings.ReplaceAll(n, "--", "-")
	}
	if len(n) > tools.MaxServerNameLen {
		n = strings.TrimRight(n[:tools.MaxServerNameLen], "-")
	}
	if tools.CheckServerName(n) != nil {
		return "server"
	}
	return n
}
