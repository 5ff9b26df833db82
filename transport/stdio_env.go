package transport

import (
	"runtime"
	"strings"
)

// baseEnvPOSIX and baseEnvWindows are the variables every stdio child
// inherits: the allowlist of the MCP SDKs (the TypeScript SDK's
// getDefaultEnvironment), which npx, uvx and the like need to run at all.
var (
	baseEnvPOSIX   = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
	baseEnvWindows = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH",
		"PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
)

// baseEnvMore are variables beyond the SDKs' list that describe the host,
// not a server, and whose absence breaks servers in ways hard to trace
// (docs/design.md §8): the locale and time zone (text encoding, dates),
// the temp dir, the XDG base directories (uvx's cache, a desktop
// session's runtime dir), the host's proxies (npx and pip cannot
// download without them behind a corporate proxy) and its extra CA
// certificates (the same proxy's TLS interception), and where the Docker
// CLI finds its daemon (rootless and remote daemons: `docker run`
// servers fail to start without it).
var baseEnvMore = []string{"LANG", "LANGUAGE", "TZ", "TMPDIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"}

// baseEnvPrefixes keep every variable of a family: the locale's LC_*
// categories and the XDG base directories.
var baseEnvPrefixes = []string{"LC_", "XDG_"}

// BaseEnv returns the entries of environ ("KEY=value", as os.Environ
// gives them) that a stdio child inherits without InheritEnv: the SDKs'
// allowlist for the platform, plus the locale, time zone, temp dir, XDG
// directories, proxies and CA certificate paths. Like the SDKs, it drops
// a value that starts with "()" (an exported shell function).
func BaseEnv(environ []string) []string {
	names := baseEnvPOSIX
	if runtime.GOOS == "windows" {
		names = baseEnvWindows
	}
	keep := func(k string) bool {
		for _, n := range names {
			if k == n || (runtime.GOOS == "windows" && strings.EqualFold(k, n)) {
				return true
			}
		}
		for _, n := range baseEnvMore {
			if k == n {
				return true
			}
		}
		for _, p := range baseEnvPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(v, "()") || !keep(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
