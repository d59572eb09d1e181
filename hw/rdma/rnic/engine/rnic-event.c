/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the event table (rnic-event.h) and events as text.
 */
#include <string.h>
#include "rnic-engine-int.h"

typedef struct RnicEventInfo {
    const char *name;           /* "qp_state": rnic_qp_state */
    const char *args;           /* "qpn from to" */
} RnicEventInfo;

static const RnicEventInfo rnic_events[RNIC_EV__MAX] = {
#define RNIC_EVENT_INFO(id_, name_, cls_, arity_, args_) \
    [RNIC_EV_##id_] = { .name = #name_, .args = args_ },
    RNIC_EVENTS(RNIC_EVENT_INFO)
#undef RNIC_EVENT_INFO
};

char *rnic_event_describe(RnicEvent ev, const RnicEventArgs *a)
{
    GString *s = g_string_new(NULL);
    gchar **names;
    int i;

    if (ev >= RNIC_EV__MAX) {
        g_string_printf(s, "event %u", ev);
        return g_string_free(s, false);
    }
    g_string_append(s, rnic_events[ev].name);
    names = g_strsplit(rnic_events[ev].args, " ", RNIC_EVENT_ARGS);
    for (i = 0; names[i] && names[i][0]; i++) {
        g_string_append_printf(s, " %s=%" G_GUINT64_FORMAT, names[i],
                               a->v[i]);
    }
    g_strfreev(names);
    if (a->why) {
        g_string_append_printf(s, ": %s", a->why);
    }
    return g_string_free(s, false);
}

void rnic_event_emit(RnicEngine *e, RnicEvent ev, const RnicEventArgs *a)
{
    e->ops->event(e->opaque, ev, a);
}

void rnic_event_vprintf(RnicEngine *e, RnicEvent ev, uint64_t v0, uint64_t v1,
                        uint64_t v2, const char *fmt, va_list ap)
{
    RnicEventArgs a = { .v = { v0, v1, v2 } };
    char *why;

    if (!rnic_event_on(e, ev)) {
        return;
    }
    why = g_strdup_vprintf(fmt, ap);
    a.why = why;
    rnic_event_emit(e, ev, &a);
    g_free(why);
}
