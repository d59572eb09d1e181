/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the typed events (rnic-event.h) a host traces — what
 * a SEND reports, a guest mistake as a UB event with its numbers and
 * reason, and nothing at all while the host says events are off — and the
 * event table itself: each row's arity against its names, its trace event
 * (hw/rdma/rnic/trace-events, called from the row by rnic-pci.c) and the
 * engine's rnic_event() calls.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-roce.h"

/* Is there an event whose text starts with 'prefix'? */
static bool logged(TestHost *h, const char *prefix)
{
    guint i;

    for (i = 0; i < h->log->len; i++) {
        if (g_str_has_prefix(g_ptr_array_index(h->log, i), prefix)) {
            return true;
        }
    }
    if (g_test_verbose()) {
        for (i = 0; i < h->log->len; i++) {
            g_printerr("  %s\n", (char *)g_ptr_array_index(h->log, i));
        }
    }
    return false;
}

static void clear_log(TestHost *h)
{
    g_ptr_array_set_size(h->log, 0);
}

/* A SEND: its WQE, its packet on both sides and its completion, typed. */
static void test_send(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    g_autofree char *start = NULL, *tx = NULL, *rx = NULL, *done = NULL;
    g_autofree char *state = NULL;
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };

    /* normal operation is reported only to a host that traces */
    clear_log(h);
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    g_assert_cmpuint(h->log->len, ==, g_test_verbose() ? h->log->len : 0);

    h->trace = true;
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    start = g_strdup_printf("wqe_start qpn=%u index=1 opcode=%u length=100",
                            p->a->qpn, RNIC_WR_SEND);
    tx = g_strdup_printf("pkt_tx qpn=%u dest_qp=%u opcode=%u", p->a->qpn,
                         p->b->qpn, RNIC_ROCE_RC_SEND_ONLY);
    rx = g_strdup_printf("pkt_rx qpn=%u opcode=%u", p->b->qpn,
                         RNIC_ROCE_RC_SEND_ONLY);
    done = g_strdup_printf("wqe_done qpn=%u index=1 opcode=%u status=%u",
                           p->a->qpn, RNIC_WR_SEND, RNIC_WC_SUCCESS);
    g_assert_true(logged(h, start));
    g_assert_true(logged(h, tx));
    g_assert_true(logged(h, rx));
    g_assert_true(logged(h, done));
    g_assert_false(logged(h, "admin_done"));
    g_assert_cmpuint(h->guest_errors, ==, 0);
    /* a state change, by the admin queue */
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    state = g_strdup_printf("qp_state qpn=%u from=%u to=%u", p->a->qpn,
                            RNIC_QPS_RTS, RNIC_QPS_ERR);
    g_assert_true(logged(h, state));
    g_assert_true(logged(h, "admin_done opcode="));
}

/* A SEND from an SGE with a key of no MR: ub_sge with its numbers. */
static void test_guest_mistake(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra ^ 0x100);
    g_autofree char *sge = NULL;

    clear_log(h);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_PROT_ERR);
    sge = g_strdup_printf("ub_sge sge=0 lkey=%u addr=%" G_GUINT64_FORMAT
                          " length=64: ",
                          p->mra ^ 0x100, p->bufa);
    g_assert_true(logged(h, sge));
    g_assert_true(logged(h, "ub_wqe qpn="));
    g_assert_cmpuint(h->guest_errors, ==, 2);   /* the SGE, the WQE */
}

/* Events off: the engine asks and reports nothing, the device works. */
static void test_off(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra ^ 0x100);

    clear_log(h);
    h->events_off = true;
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_PROT_ERR);
    g_assert_cmpuint(h->log->len, ==, 0);
    g_assert_cmpuint(h->guest_errors, ==, 0);
    h->events_off = false;
}

/* The text form: lower-case name, named numbers, the reason. */
static void test_describe(void)
{
    RnicEventArgs a = { .v = { 3, 7 }, .why = "SGE outside the MR" };
    g_autofree char *text = rnic_event_describe(RNIC_EV_UB_WQE, &a);
    g_autofree char *bare = NULL;

    g_assert_cmpstr(text, ==, "ub_wqe qpn=3 index=7: SGE outside the MR");
    a.why = NULL;
    bare = rnic_event_describe(RNIC_EV_LINK, &a);
    g_assert_cmpstr(bare, ==, "link up=3");
    g_assert_cmpint(rnic_event_class(RNIC_EV_UB_WQE), ==, RNIC_EVC_UB);
    g_assert_cmpint(rnic_event_class(RNIC_EV_ERR_WIRE_RX), ==, RNIC_EVC_ERR);
    g_assert_cmpint(rnic_event_class(RNIC_EV_QP_STATE), ==, RNIC_EVC_TRACE);
}

/* The table, as rnic-event.h writes it. */
typedef struct EventRow {
    const char *id;             /* "QP_STATE" */
    const char *name;           /* "qp_state" */
    unsigned arity;
    const char *args;           /* "qpn from to" */
} EventRow;

static const EventRow rows[RNIC_EV__MAX] = {
#define EVENT_ROW(id_, name_, cls_, arity_, args_) \
    [RNIC_EV_##id_] = { #id_, #name_, arity_, args_ },
    RNIC_EVENTS(EVENT_ROW)
#undef EVENT_ROW
};

static const EventRow *row_by_id(const char *id)
{
    int ev;

    for (ev = 0; ev < RNIC_EV__MAX; ev++) {
        if (!strcmp(rows[ev].id, id)) {
            return &rows[ev];
        }
    }
    return NULL;
}

/* The checkout's file 'rel' (RNIC_FIXTURES is tests/unit/fixtures). */
static char *source_file(const char *rel)
{
    const char *dir = g_getenv("RNIC_FIXTURES");

    return dir ? g_build_filename(dir, "..", "..", "..", rel, NULL) : NULL;
}

/* Each row: the lower-case name, as many argument names as its arity. */
static void test_arity_names(void)
{
    int ev;

    for (ev = 0; ev < RNIC_EV__MAX; ev++) {
        const EventRow *r = &rows[ev];
        g_autofree char *lower = g_ascii_strdown(r->id, -1);
        g_auto(GStrv) names = g_strsplit(r->args, " ", -1);
        unsigned n = r->args[0] ? g_strv_length(names) : 0;

        g_assert_cmpstr(r->name, ==, lower);
        g_assert_cmpuint(r->arity, <=, RNIC_EVENT_ARGS);
        if (n != r->arity) {
            g_test_message("%s: arity %u, arguments \"%s\"", r->id,
                           r->arity, r->args);
        }
        g_assert_cmpuint(n, ==, r->arity);
    }
}

/*
 * Each row's trace event rnic_<name>: 'arity' arguments and the reason
 * (rnic-pci.c calls it with v[0] .. v[arity - 1] and why).
 */
static void test_arity_trace_events(void)
{
    g_autofree char *path = source_file("hw/rdma/rnic/trace-events");
    g_autofree gchar *text = NULL;
    g_auto(GStrv) lines = NULL;
    int ev;

    if (!path) {
        g_test_skip("RNIC_FIXTURES not set (meson test sets it)");
        return;
    }
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (ev = 0; ev < RNIC_EV__MAX; ev++) {
        const EventRow *r = &rows[ev];
        g_autofree char *head = g_strdup_printf("rnic_%s(", r->name);
        g_auto(GStrv) params = NULL;
        const char *line = NULL;
        const char *why;
        char *end;
        int i;

        for (i = 0; lines[i]; i++) {
            if (g_str_has_prefix(lines[i], head)) {
                line = lines[i];
            }
        }
        if (!line) {
            g_test_message("no trace event %s", head);
        }
        g_assert_nonnull(line);
        line += strlen(head);
        end = strchr(line, ')');
        g_assert_nonnull(end);
        *end = '\0';
        params = g_strsplit(line, ",", -1);
        if (g_strv_length(params) != r->arity + 1) {
            g_test_message("rnic_%s(%s): arity %u", r->name, line, r->arity);
        }
        g_assert_cmpuint(g_strv_length(params), ==, r->arity + 1);
        why = params[r->arity];
        g_assert_true(strstr(why, "char *") && g_str_has_suffix(why, "why"));
    }
}

/*
 * 'src' with comments blanked and the insides of string and character
 * literals blanked, so that commas and parentheses are the code's.
 */
static void blank_comments_and_strings(char *src)
{
    char *p = src;

    while (*p) {
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            char *stop = e ? e + 2 : p + strlen(p);

            for (; p < stop; p++) {
                *p = *p == '\n' ? '\n' : ' ';
            }
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++) {
                *p = ' ';
            }
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;

            for (; *p && *p != q && *p != '\n'; p++) {
                if (*p == '\\' && p[1]) {
                    *p++ = ' ';
                }
                *p = ' ';
            }
            if (*p == q) {
                p++;
            }
        } else {
            p++;
        }
    }
}

/*
 * The arguments of the call whose '(' is at 'open', split at its top-level
 * commas and trimmed; NULL if the parentheses do not close.
 */
static GPtrArray *call_args(const char *open)
{
    GPtrArray *args = g_ptr_array_new_with_free_func(g_free);
    const char *start = open + 1, *p;
    int depth = 0;

    for (p = open + 1; *p; p++) {
        if (*p == '(' || *p == '[' || *p == '{') {
            depth++;
        } else if ((*p == ')' || *p == ']' || *p == '}') && depth) {
            depth--;
        } else if ((*p == ',' && !depth) || *p == ')') {
            g_ptr_array_add(args, g_strstrip(g_strndup(start, p - start)));
            if (*p == ')') {
                return args;
            }
            start = p + 1;
        }
    }
    g_ptr_array_unref(args);
    return NULL;
}

/*
 * Every rnic_event(e, NAME, why, ...) in the engine passes as many numbers
 * as NAME's arity (an event of arity 0 may pass a single 0): a number
 * beyond it would never reach the trace event.
 */
static void test_arity_engine_calls(void)
{
    g_autofree char *dir = source_file("hw/rdma/rnic/engine");
    bool seen[RNIC_EV__MAX] = { false };
    unsigned events = 0;
    const char *file;
    GDir *d;
    int ev;

    if (!dir) {
        g_test_skip("RNIC_FIXTURES not set (meson test sets it)");
        return;
    }
    d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    while ((file = g_dir_read_name(d))) {
        g_autofree char *path = g_build_filename(dir, file, NULL);
        g_autofree gchar *src = NULL;
        const char *p;

        if (!g_str_has_suffix(file, ".c") && !g_str_has_suffix(file, ".h")) {
            continue;
        }
        g_assert_true(g_file_get_contents(path, &src, NULL, NULL));
        blank_comments_and_strings(src);
        for (p = src; (p = strstr(p, "rnic_event(")); p++) {
            const char *line = p;
            g_autoptr(GPtrArray) args = NULL;
            const EventRow *r;
            unsigned n;

            if (p > src && (g_ascii_isalnum(p[-1]) || p[-1] == '_')) {
                continue;
            }
            while (line > src && line[-1] != '\n') {
                line--;
            }
            while (*line == ' ') {
                line++;
            }
            if (g_str_has_prefix(line, "#define")) {
                continue;   /* the macro itself */
            }
            args = call_args(p + strlen("rnic_event"));
            g_assert_nonnull(args);
            g_assert_cmpuint(args->len, >=, 3);
            r = row_by_id(g_ptr_array_index(args, 1));
            if (!r) {
                g_test_message("%s: rnic_event() of unknown event %s", file,
                               (char *)g_ptr_array_index(args, 1));
            }
            g_assert_nonnull(r);
            n = args->len - 3;
            if (r->arity == 0 && n == 1 &&
                !strcmp(g_ptr_array_index(args, 3), "0")) {
                n = 0;
            }
            if (n != r->arity) {
                g_test_message("%s: rnic_event(%s) with %u numbers, arity %u",
                               file, r->id, n, r->arity);
            }
            g_assert_cmpuint(n, ==, r->arity);
            seen[r - rows] = true;
        }
    }
    g_dir_close(d);
    /* the engine's files were found and read: most events are seen */
    for (ev = 0; ev < RNIC_EV__MAX; ev++) {
        events += seen[ev];
    }
    g_assert_cmpuint(events, >=, RNIC_EV__MAX / 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tv_test_add_pair("/rnic/events/send", NULL, test_send);
    tv_test_add_pair("/rnic/events/guest-mistake", NULL, test_guest_mistake);
    tv_test_add_pair("/rnic/events/off", NULL, test_off);
    g_test_add_func("/rnic/events/describe", test_describe);
    g_test_add_func("/rnic/events/arity/names", test_arity_names);
    g_test_add_func("/rnic/events/arity/trace-events",
                    test_arity_trace_events);
    g_test_add_func("/rnic/events/arity/engine-calls",
                    test_arity_engine_calls);
    return g_test_run();
}
