/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: reader/writer of the migration state image (bounds-checked:
 * a malformed image makes the reader fail, never read past its end).
 */
#include <string.h>
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
