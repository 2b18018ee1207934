/* fleet_phases.c — the program's phases over several traces (`report DIR`): each rank's "by
 * phase" table (allocated, peak and still live per phase, as one trace's report shows it),
 * for the ranks whose traces have ranges, from the phases cmt_fleet_load kept (no replay of
 * its own). */
#include <stdio.h>

#include "fleet/fleet_cli.h"
#include "print/phase_print.h"

int cmt__fleet_phases(const struct cmt_fleet *f, struct cmt__json *j)
{
    int shown = 0;
    if (j)
        cmt__json_array(j, "rank_phases");
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error || !pr->phases.range_count) /* kept by the fleet's one replay */
            continue;
        char who[256];
        if (j) {
            cmt__json_object(j, NULL);
            cmt__fleet_json_who(j, pr);
            cmt__phases_json(j, &pr->phases);
            cmt__json_end_object(j);
        } else {
            printf("\n%s:", cmt__fleet_who(pr, who, sizeof who)); /* the table opens a line */
            cmt__phases_text(stdout, &pr->phases);
        }
        shown++;
    }
    if (j)
        cmt__json_end_array(j);
    return shown;
}
