package tools

import "strconv"

// MaxServerNameLen is the longest server name. It leaves the tool part of
// a public name (MaxNameLen in all) at least 30 characters.
const MaxServerNameLen = 32

// ServerNameRule is the rule CheckServerName enforces, in words.
const ServerNameRule = `server name must be 1-32 characters of [A-Za-z0-9_-], with no "__" and not ending in "_"`

// CheckServerName reports whether name may name a server: 1 to 32
// characters of [A-Za-z0-9_-], containing no "__" and not ending in "_".
// The error, a *ServerNameError, states the rule and what name breaks.
//
// A public tool name is "<server>__<tool>" (PublicNames), and a tool name
// may itself contain "__" or start with "_". Under this rule the first
// "__" of a public name always ends the server name: the server name holds
// no "__", and since it does not end in "_", the separator cannot start
// inside it either. So the server prefix of a public name is unambiguous,
// two servers can never produce the same public name, and which server
// owns a name does not depend on which of them started first (docs/design.md §7
// R29). Without it, server "a" with tool "b__c" and server "a__b" with
// tool "c" both want "a__b__c", and the first to register wins.
//
// A Sink does not check server names (Set.Reserve takes any non-empty
// name); the supervisor's Options and the config file do, with this rule.
func CheckServerName(name string) error {
	problem := ""
	switch {
	case name == "":
		problem = "is empty"
	case len(name) > MaxServerNameLen:
		problem = "has " + strconv.Itoa(len(name)) + " characters"
	default:
		for i := 0; i < len(name); i++ {
			if !validByte(name[i]) {
				problem = "has " + strconv.QuoteRune(rune(name[i])) + " at byte " + strconv.Itoa(i)
				if name[i] >= 0x80 {
					problem = "has a non-ASCII character at byte " + strconv.Itoa(i)
				}
				break
			}
			if i > 0 && name[i] == '_' && name[i-1] == '_' {
				problem = `contains "__"`
				break
			}
		}
		if problem == "" && name[len(name)-1] == '_' {
			problem = `ends in "_"`
		}
	}
	if problem == "" {
		return nil
	}
	return &ServerNameError{Name: name, Problem: problem}
}

// ValidServerName reports whether CheckServerName accepts name.
func ValidServerName(name string) bool { return CheckServerName(name) == nil }

// A ServerNameError is a server name that breaks ServerNameRule.
type ServerNameError struct {
	Name    string
	Problem string // what breaks the rule: `contains "__"`, `ends in "_"`, ...
}

func (e *ServerNameError) Error() string {
	return ServerNameRule + " (it prefixes the public tool names, <server>__<tool>): " +
		strconv.Quote(e.Name) + " " + e.Problem
}

// Is makes errors.Is(err, ErrInvalidName) hold.
func (e *ServerNameError) Is(target error) bool { return target == ErrInvalidName }
