/* fleet_internal.h — between fleet.c and fleet_views.c (this folder only). */
#ifndef CMT_FLEET_INTERNAL_H
#define CMT_FLEET_INTERNAL_H

#include "fleet.h"

/* After the processes are loaded and sorted: ranks, GPUs (each device's gpu key), the first
 * failure, the imbalance, the time span. @return 0 or CMT_ENOMEM. */
int cmt__fleet_derive(struct cmt_fleet *fleet);

#endif
