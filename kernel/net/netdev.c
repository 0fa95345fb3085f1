// The netdev registry, and the driver table it is given (kernel/nics.c,
// above the drivers, is the one place that names the NIC families).
#include "netdev.h"
#include <err.h>

static const struct netdev_driver *drivers;
static int ndrivers;

struct netdev *netdev_devs[NETDEV_MAX];
int netdev_ndevs;
#define devs netdev_devs
#define ndevs netdev_ndevs
static void (*upper_rx)(struct netdev *, void *);
static void (*upper_link)(struct netdev *, bool, void *);
static bool promisc;

void netdev_set_promisc(bool on) { promisc = on; }
bool netdev_promisc(void) { return promisc; }

static int queues = 1;

void netdev_set_queues(int n) { queues = n < 1 ? 1 : n > NETDEV_RXQ_MAX ? NETDEV_RXQ_MAX : n; }
int netdev_queues(void) { return queues; }

int netdev_register(struct netdev *nd)
{
	if (ndevs == NETDEV_MAX)
		return -E_NOMEM;
	nd->index = ndevs;
	if (nd->rx_queues < 1)
		nd->rx_queues = 1;
	nd->rx_ready = upper_rx;
	nd->link_change = upper_link;
	devs[ndevs++] = nd;
	return nd->index;
}

void netdev_unregister(struct netdev *nd)
{
	int k = 0;
	for (int i = 0; i < ndevs; i++)
		if (devs[i] != nd)
			devs[k] = devs[i], devs[k]->index = k, k++;
	for (int i = k; i < ndevs; i++)
		devs[i] = NULL;
	ndevs = k;
}


int netdev_detach_all(void)
{
	int n = ndevs;
	while (ndevs > 0) {
		struct netdev *nd = devs[--ndevs];
		devs[ndevs] = NULL;
		nd->ops->detach(nd);
	}
	return n;
}

uint64_t netdev_frames_owned_all(void)
{
	uint64_t n = 0;
	for (int i = 0; i < ndevs; i++) {
		struct netdev_stats s;
		devs[i]->ops->get_stats(devs[i], &s);
		n += s.frames_owned;
	}
	return n;
}

void netdev_set_drivers(const struct netdev_driver *table, int n)
{
	drivers = table;
	ndrivers = n;
}

int netdev_probe_all(void)
{
	for (int i = 0; i < ndrivers; i++)
		drivers[i].probe_all();
	return ndevs;
}

void netdev_set_upper(void (*rx_ready)(struct netdev *, void *),
		      void (*link_change)(struct netdev *, bool, void *))
{
	upper_rx = rx_ready;
	upper_link = link_change;
	for (int i = 0; i < ndevs; i++)
		devs[i]->rx_ready = rx_ready, devs[i]->link_change = link_change;
}
