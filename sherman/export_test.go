package sherman

// SetReleaseFirst makes AddUnderLock release the lock before writing the
// data (the wrong order), for the ordering tests' negative control.
func SetReleaseFirst(c *Client, on bool) { c.releaseFirst = on }
