package backoff_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpkeep/mcpkeep/backoff"
)

// The default stdio policy: ten retries, doubling from 500ms to the 30s cap,
// then give up.
func Example() {
	p, err := backoff.Default().Resolve()
	if err != nil {
		panic(err)
	}
	for i, d := range p.Schedule() {
		fmt.Printf("retry %d/%d after %v\n", i+1, p.MaxAttempts, d)
	}
	fmt.Println("total", p.Total())
	fmt.Println("stability window", p.StabilityWindow())
	// Output:
	// retry 1/10 after 500ms
	// retry 2/10 after 1s
	// retry 3/10 after 2s
	// retry 4/10 after 4s
	// retry 5/10 after 8s
	// retry 6/10 after 16s
	// retry 7/10 after 30s
	// retry 8/10 after 30s
	// retry 9/10 after 30s
	// retry 10/10 after 30s
	// total 2m31.5s
	// stability window 30s
}

// A cap below the initial delay is rejected with an error naming the field.
func Example_resolveError() {
	p := backoff.Default()
	p.MaxDelay = 100 * time.Millisecond
	_, err := p.Resolve()
	fmt.Println(err)

	var fe *backoff.FieldError
	fmt.Println(errors.Is(err, backoff.ErrInvalidPolicy), errors.As(err, &fe) && fe.Field == "maxDelay")
	// Output:
	// backoff: maxDelay 100ms: must be >= initialDelay (500ms)
	// true true
}
