package backoff_test

import (
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// The first failure of an outage spends retry 1 of N: the log line reads
// "reconnecting attempt 1/10".
func TestBudgetFirstFailure(t *testing.T) {
	b := backoff.NewBudget(backoff.Default())
	if b.Attempt() != 0 || !b.Left() || b.Max() != 10 {
		t.Fatalf("fresh budget: Attempt=%d Left=%v Max=%d, want 0 true 10", b.Attempt(), b.Left(), b.Max())
	}
	k, ok := b.Next()
	if k != 1 || !ok {
		t.Fatalf("first Next() = (%d, %v), want (1, true)", k, ok)
	}
	if b.Attempt() != 1 {
		t.Fatalf("Attempt() after first failure = %d, want 1", b.Attempt())
	}
}

func TestBudgetSpendAndReset(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		wantMax     int
	}{
		{"one retry", 1, 1},
		{"three retries", 3, 3},
		{"default", 10, 10},
		// Unresolved policies still keep I4 (0 <= attempt <= max).
		{"unresolved zero", 0, 0},
		{"unresolved negative", -5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backoff.NewBudget(backoff.Policy{InitialDelay: time.Second, MaxDelay: time.Minute, MaxAttempts: tt.maxAttempts})
			if b.Max() != tt.wantMax {
				t.Fatalf("Max() = %d, want %d", b.Max(), tt.wantMax)
			}
			for round := range 2 { // the second round proves Reset restores the whole budget
				for want := 1; want <= tt.wantMax; want++ {
					if !b.Left() {
						t.Fatalf("round %d: Left() = false before retry %d", round, want)
					}
					k, ok := b.Next()
					if k != want || !ok {
						t.Fatalf("round %d: Next() = (%d, %v), want (%d, true)", round, k, ok, want)
					}
				}
				for range 3 { // spent stays spent: nothing changes
					k, ok := b.Next()
					if ok || k != tt.wantMax {
						t.Fatalf("round %d: Next() on spent budget = (%d, %v), want (%d, false)", round, k, ok, tt.wantMax)
					}
					if b.Attempt() != tt.wantMax || b.Left() {
						t.Fatalf("round %d: spent budget Attempt=%d Left=%v, want %d false", round, b.Attempt(), b.Left(), tt.wantMax)
					}
				}
				b.Reset()
				if b.Attempt() != 0 || b.Left() != (tt.wantMax > 0) {
					t.Fatalf("round %d: after Reset Attempt=%d Left=%v", round, b.Attempt(), b.Left())
				}
			}
		})
	}
}

// Enabled is not the budget's business: a disabled policy still has its
// retries counted, and the supervisor's own guard decides not to use them.
func TestBudgetIgnoresEnabled(t *testing.T) {
	p := backoff.Default()
	p.Enabled = false
	if b := backoff.NewBudget(p); b.Max() != 10 || !b.Left() {
		t.Fatalf("disabled policy budget Max=%d Left=%v, want 10 true", b.Max(), b.Left())
	}
}
