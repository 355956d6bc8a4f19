package workerpool

// SetMark installs the timeline hook; set it before any worker or
// dispatcher starts, and clear it when they have stopped.
func SetMark(f func(task, stage string)) { mark = f }
