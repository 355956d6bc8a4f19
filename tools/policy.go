package tools

// PolicyFunc reports the run's approval policy as it is now
// (messages.Policy*): it follows mid-run changes, as the gate does.
type PolicyFunc func() string

// CurrentPolicy is env's approval policy now; messages.PolicyNone when the
// run gave its tools none (a tool then assumes the strictest reading).
func CurrentPolicy(env *Env) string {
	if env == nil || env.Policy == nil {
		return ""
	}
	return env.Policy()
}
