package mcpkeep

// Observers combines observers into one that calls each in order,
// skipping nil ones; nil when none is left.
func Observers(list ...Observer) Observer {
	var keep []Observer
	for _, fn := range list {
		if fn != nil {
			keep = append(keep, fn)
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case 1:
		return keep[0]
	}
	return func(t Transition) {
		for _, fn := range keep {
			fn(t)
		}
	}
}
