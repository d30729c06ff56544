package mmapfile

import "syscall"

// populate maps every page at once: a recording is read from start to end,
// and one call is far cheaper than a page fault per page or two.
const populate = syscall.MAP_POPULATE
