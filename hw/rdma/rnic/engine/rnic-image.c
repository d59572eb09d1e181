/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: reader/writer of the migration state image (bounds-checked:
 * a malformed image makes the reader fail, never read past its end).
 */
#include <inttypes.h>
#include <string.h>
#include "rnic/rnic-abi.h"
#include "rnic-image.h"

void rnic_image_put_bytes(RnicImageWriter *w, const void *p, size_t len)
{
    g_byte_array_append(w->out, p, len);
}

void rnic_image_put_u8(RnicImageWriter *w, uint8_t v)
{
    rnic_image_put_bytes(w, &v, 1);
}

void rnic_image_put_u16(RnicImageWriter *w, uint16_t v)
{
    v = GUINT16_TO_LE(v);
    rnic_image_put_bytes(w, &v, 2);
}

void rnic_image_put_u32(RnicImageWriter *w, uint32_t v)
{
    v = GUINT32_TO_LE(v);
    rnic_image_put_bytes(w, &v, 4);
}

void rnic_image_put_u64(RnicImageWriter *w, uint64_t v)
{
    v = GUINT64_TO_LE(v);
    rnic_image_put_bytes(w, &v, 8);
}

void rnic_image_begin_section(RnicImageWriter *w, uint16_t tag, uint16_t flags)
{
    w->section_start = w->out->len;
    rnic_image_put_u16(w, tag);
    rnic_image_put_u16(w, flags);
    rnic_image_put_u32(w, 0);   /* length, patched by end_section */
}

void rnic_image_end_section(RnicImageWriter *w)
{
    uint32_t len = GUINT32_TO_LE(w->out->len - w->section_start - 8);

    memcpy(w->out->data + w->section_start + 4, &len, 4);
}

bool rnic_image_get_bytes(RnicImageReader *r, void *p, size_t len)
{
    if (r->overrun || len > r->len - r->pos) {
        r->overrun = true;
        memset(p, 0, len);
        return false;
    }
    memcpy(p, r->data + r->pos, len);
    r->pos += len;
    return true;
}

uint8_t rnic_image_get_u8(RnicImageReader *r)
{
    uint8_t v;

    rnic_image_get_bytes(r, &v, 1);
    return v;
}

uint16_t rnic_image_get_u16(RnicImageReader *r)
{
    uint16_t v;

    rnic_image_get_bytes(r, &v, 2);
    return GUINT16_FROM_LE(v);
}

uint32_t rnic_image_get_u32(RnicImageReader *r)
{
    uint32_t v;

    rnic_image_get_bytes(r, &v, 4);
    return GUINT32_FROM_LE(v);
}

uint64_t rnic_image_get_u64(RnicImageReader *r)
{
    uint64_t v;

    rnic_image_get_bytes(r, &v, 8);
    return GUINT64_FROM_LE(v);
}

bool rnic_image_next_section(RnicImageReader *r, uint16_t *tag,
                             uint16_t *flags, RnicImageReader *payload)
{
    uint32_t len;

    if (r->overrun || r->pos == r->len) {
        return false;
    }
    *tag = rnic_image_get_u16(r);
    *flags = rnic_image_get_u16(r);
    len = rnic_image_get_u32(r);
    if (r->overrun || len > r->len - r->pos) {
        r->overrun = true;
        return false;
    }
    payload->data = r->data + r->pos;
    payload->len = len;
    payload->pos = 0;
    payload->overrun = false;
    r->pos += len;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Declarative fields                                                     */
/* ---------------------------------------------------------------------- */

/* The value of an integer member of f->size bytes, and its update. */
static uint64_t rnic_field_get_uint(const RnicImageField *f, const void *p)
{
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (f->size) {
    case 1:
        memcpy(&v8, p, 1);
        return v8;
    case 2:
        memcpy(&v16, p, 2);
        return v16;
    case 4:
        memcpy(&v32, p, 4);
        return v32;
    default:
        memcpy(&v64, p, 8);
        return v64;
    }
}

static void rnic_field_set_uint(const RnicImageField *f, void *p, uint64_t v)
{
    uint8_t v8 = v;
    uint16_t v16 = v;
    uint32_t v32 = v;

    switch (f->size) {
    case 1:
        memcpy(p, &v8, 1);
        break;
    case 2:
        memcpy(p, &v16, 2);
        break;
    case 4:
        memcpy(p, &v32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

void rnic_image_put_fields(RnicImageWriter *w, const RnicImageField *f,
                           const void *obj)
{
    for (; f->name; f++) {
        const void *p = (const char *)obj + f->offset;
        const uint32_t *target;
        uint8_t le[8];
        uint64_t v;
        unsigned i;

        switch (f->kind) {
        case RNIC_IMG_KIND_UINT:
            v = rnic_field_get_uint(f, p);
            for (i = 0; i < f->size; i++) {
                le[i] = v >> (8 * i);
            }
            rnic_image_put_bytes(w, le, f->size);
            break;
        case RNIC_IMG_KIND_BYTES:
            rnic_image_put_bytes(w, p, f->size);
            break;
        case RNIC_IMG_KIND_BOOL:
        case RNIC_IMG_KIND_BIT0:
            rnic_image_put_u8(w, *(const bool *)p);
            break;
        case RNIC_IMG_KIND_REF:
            memcpy(&target, p, sizeof(target));
            rnic_image_put_u32(w, target ? *target : RNIC_HANDLE_NONE);
            break;
        }
    }
}

bool rnic_image_get_fields(RnicImageReader *r, const RnicImageField *f,
                           void *obj, uint32_t *handles)
{
    bool clean = true;

    for (; f->name; f++) {
        void *p = (char *)obj + f->offset;
        uint8_t le[8];
        uint64_t v = 0;
        unsigned i;

        switch (f->kind) {
        case RNIC_IMG_KIND_UINT:
            rnic_image_get_bytes(r, le, f->size);
            for (i = 0; i < f->size; i++) {
                v |= (uint64_t)le[i] << (8 * i);
            }
            rnic_field_set_uint(f, p, v & f->mask);
            break;
        case RNIC_IMG_KIND_BYTES:
            rnic_image_get_bytes(r, p, f->size);
            break;
        case RNIC_IMG_KIND_BOOL:
        case RNIC_IMG_KIND_BIT0:
            v = rnic_image_get_u8(r);
            clean &= f->kind != RNIC_IMG_KIND_BOOL || v <= 1;
            *(bool *)p = v & 1;
            break;
        case RNIC_IMG_KIND_REF:
            *handles++ = rnic_image_get_u32(r);
            memset(p, 0, sizeof(void *));
            break;
        }
    }
    return clean && !r->overrun;
}

void rnic_image_copy_fields(const RnicImageField *f, void *dst,
                            const void *src)
{
    for (; f->name; f++) {
        memcpy((char *)dst + f->offset, (const char *)src + f->offset,
               f->size);
    }
}

/* "  prefix.name = " (or "  name = "): a line of a dump */
static void rnic_dump_name(GString *out, const char *prefix, const char *name)
{
    g_string_append_printf(out, "  %s%s%s = ", prefix ? prefix : "",
                           prefix ? "." : "", name);
}

/* An integer: decimal, and hex too when that differs. */
static void rnic_dump_uint(GString *out, uint64_t v)
{
    g_string_append_printf(out, "%" PRIu64, v);
    if (v > 9) {
        g_string_append_printf(out, " (0x%" PRIx64 ")", v);
    }
}

static void rnic_field_print(GString *out, const RnicImageField *f,
                             const void *p, uint32_t handle)
{
    uint16_t i;

    switch (f->kind) {
    case RNIC_IMG_KIND_UINT:
        rnic_dump_uint(out, rnic_field_get_uint(f, p));
        break;
    case RNIC_IMG_KIND_BYTES:
        for (i = 0; i < f->size; i++) {
            g_string_append_printf(out, "%02x", ((const uint8_t *)p)[i]);
        }
        break;
    case RNIC_IMG_KIND_BOOL:
    case RNIC_IMG_KIND_BIT0:
        g_string_append(out, *(const bool *)p ? "1" : "0");
        break;
    case RNIC_IMG_KIND_REF:
        if (handle == RNIC_HANDLE_NONE) {
            g_string_append(out, "none");
        } else {
            g_string_append_printf(out, "%u", handle);
        }
        break;
    }
}

/* Space for any object a table describes: up to its last member. */
static size_t rnic_fields_extent(const RnicImageField *f)
{
    size_t end = 0;

    for (; f->name; f++) {
        end = MAX(end, (size_t)f->offset + f->size);
    }
    return end;
}

bool rnic_image_dump_fields(RnicImageReader *r, GString *out,
                            const char *prefix, const RnicImageField *f,
                            void *obj)
{
    g_autofree void *scratch = obj ? NULL : g_malloc0(rnic_fields_extent(f));
    bool clean = true;

    obj = obj ? obj : scratch;
    for (; f->name; f++) {
        /* one field at a time: the lines stop where the image does */
        const RnicImageField one[2] = { *f, RNIC_IMG_END };
        uint32_t handle = 0;

        clean &= rnic_image_get_fields(r, one, obj, &handle);
        if (r->overrun) {
            return false;
        }
        rnic_dump_name(out, prefix, f->name);
        rnic_field_print(out, f, (char *)obj + f->offset, handle);
        g_string_append_c(out, '\n');
    }
    return clean;
}

/* A value read into a uint32_t or uint64_t: a one-field table. */
static void rnic_image_dump_value(RnicImageReader *r, GString *out,
                                  const char *prefix, const char *name,
                                  void *v, uint16_t size)
{
    const RnicImageField f[] = {
        { name, 0, size, RNIC_IMG_KIND_UINT, UINT64_MAX },
        RNIC_IMG_END
    };

    rnic_image_dump_fields(r, out, prefix, f, v);
}

uint32_t rnic_image_dump_u32(RnicImageReader *r, GString *out,
                             const char *prefix, const char *name)
{
    uint32_t v = 0;

    rnic_image_dump_value(r, out, prefix, name, &v, sizeof(v));
    return v;
}

uint64_t rnic_image_dump_u64(RnicImageReader *r, GString *out,
                             const char *prefix, const char *name)
{
    uint64_t v = 0;

    rnic_image_dump_value(r, out, prefix, name, &v, sizeof(v));
    return v;
}
