package sandbox

// Waiting is how many renders wait for a child slot.
func Waiting(s *Sandbox) int { return s.slots.Waiting() }
