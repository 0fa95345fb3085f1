// Error codes: system calls return -E_* on failure, one code per distinct
// cause, so a test can tell "bad identifier" from "not owner".
#ifndef LIB_ERR_H
#define LIB_ERR_H

#define E_INVAL 1      // an argument is out of its domain
#define E_FAULT 2      // a user pointer is not mapped (or not writable) for the caller
#define E_NOMEM 3      // out of frames or table slots
#define E_NOENT 4      // no such program
#define E_SRCH 5       // no such process
#define E_CHILD 6      // no child to wait for
#define E_NOSYS 7      // no such system call
#define E_BADID 8      // identifier unknown or stale (generation mismatch)
#define E_NOTOWNER 9   // the resource belongs to another process and was not granted
#define E_ALIGN 10     // offset or size not page-aligned
#define E_RANGE 11     // offset or size outside the region
#define E_OVERLAP 12   // two ranges of one region overlap
#define E_BUSY 13      // a frame is pinned by a DMA in flight
#define E_NOTBACKED 14 // a page of the range has no frame
#define E_IO 15        // the device reported an error
#define E_NODEV 16     // no such device
#define E_TIMEOUT 17   // the wait ran out
#define E_2BIG 18      // too many (arguments, packets, bytes)
#define E_EXIST 19     // already there (mapped, attached, registered)
#define E_AGAIN 20     // nothing now; try again
#define E_LINK 21      // link down
#define E_LIMIT 22     // the process has used its share (frames, regions, channels, kernel heap)
#define E_GAP 23       // a striped channel lost packets: a hole in the order (see io_stats)
#define E_NERR 24

const char *err_name(long e); // "E_BADID" for -E_BADID or E_BADID

#endif
