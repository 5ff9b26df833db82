package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// durationFlag is a duration given with a unit (500ms, 2s) or as plain
// milliseconds (500), the config file's unit. set tells a value given,
// even 0, from the flag left out.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) Set(s string) error {
	ms, err := parseMs(s)
	if err != nil {
		return err
	}
	f.d, f.set = time.Duration(ms)*time.Millisecond, true
	return nil
}

func (f *durationFlag) String() string {
	if !f.set && f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Type() string { return "duration" }

// parseMs reads a duration with a unit, or milliseconds.
func parseMs(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (500ms, 2s) or milliseconds", s)
	}
	return d.Milliseconds(), nil
}

// kvFlag is a repeatable K=V flag.
type kvFlag []string

func (k *kvFlag) String() string { return strings.Join(*k, ",") }

func (k *kvFlag) Type() string { return "K=V" }

func (k *kvFlag) Set(v string) error {
	if key, _, ok := strings.Cut(v, "="); !ok || key == "" {
		return fmt.Errorf("%q is not K=V", v)
	}
	*k = append(*k, v)
	return nil
}

func (k kvFlag) m() map[string]string {
	out := map[string]string{}
	for _, kv := range k {
		key, v, _ := strings.Cut(kv, "=")
		out[key] = v
	}
	return out
}

// completeWords offers a flag's fixed values to shell completion.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}
