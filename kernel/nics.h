// The NIC families the kernel drives (kernel/nics.c).
#ifndef NICS_H
#define NICS_H
// Gives the netdev seam the driver table, e1000 first (before netdev_probe_all).
void nics_register(void);
#endif
