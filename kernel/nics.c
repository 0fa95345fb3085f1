// The driver table: the one place that names the NIC families, above the
// drivers and the netdev seam. Adding a family is its files plus one line.
#include "nics.h"
#include "net/netdev.h"
#include "../drivers/net/e1000/e1000.h"
#include "../drivers/net/virtio/virtio_net.h"
#include "../drivers/net/e1000e/e1000e.h"

static const struct netdev_driver nics[] = {
	{ "e1000", e1000_probe_all },
	{ "virtio-net", virtio_net_probe_all },
	{ "e1000e", e1000e_probe_all },
};

void nics_register(void) { netdev_set_drivers(nics, (int)(sizeof(nics) / sizeof(nics[0]))); }
