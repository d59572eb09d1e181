/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: reader/writer of the migration state image.
 *
 * The image is a header (magic, version) followed by sections
 * { u16 tag, u16 flags, u32 length, payload }, all little-endian. A reader
 * skips sections it does not know when they are flagged optional and
 * refuses the image otherwise: that is how later additions stay compatible
 * (the engine's equivalent of vmstate subsections).
 */
#ifndef RNIC_IMAGE_H
#define RNIC_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#define RNIC_IMAGE_MAGIC    0x474d4952u /* "RIMG" */
#define RNIC_IMAGE_VERSION  1
#define RNIC_SECTION_OPTIONAL 1u

typedef struct RnicImageWriter {
    GByteArray *out;
    guint section_start;        /* offset of the open section's header */
} RnicImageWriter;

void rnic_image_put_u8(RnicImageWriter *w, uint8_t v);
void rnic_image_put_u16(RnicImageWriter *w, uint16_t v);
void rnic_image_put_u32(RnicImageWriter *w, uint32_t v);
void rnic_image_put_u64(RnicImageWriter *w, uint64_t v);
void rnic_image_put_bytes(RnicImageWriter *w, const void *p, size_t len);
void rnic_image_begin_section(RnicImageWriter *w, uint16_t tag, uint16_t flags);
void rnic_image_end_section(RnicImageWriter *w);

typedef struct RnicImageReader {
    const uint8_t *data;
    size_t len;
    size_t pos;
    bool overrun;               /* set by any read past the end */
} RnicImageReader;

uint8_t rnic_image_get_u8(RnicImageReader *r);
uint16_t rnic_image_get_u16(RnicImageReader *r);
uint32_t rnic_image_get_u32(RnicImageReader *r);
uint64_t rnic_image_get_u64(RnicImageReader *r);
bool rnic_image_get_bytes(RnicImageReader *r, void *p, size_t len);
/* Next section: its tag, flags and a reader limited to its payload. */
bool rnic_image_next_section(RnicImageReader *r, uint16_t *tag,
                             uint16_t *flags, RnicImageReader *payload);

/*
 * Declarative fields (the engine's VMStateField): the members of a struct
 * that a record holds, in image order, in one table walked by the save,
 * the load and the dump. An integer's image width is its member's: the
 * RNIC_IMG_U* macros do not compile when the two differ, so that a type
 * change cannot change the format unnoticed.
 */
typedef enum RnicImageKind {
    RNIC_IMG_KIND_UINT,         /* little-endian, the member's width */
    RNIC_IMG_KIND_BYTES,        /* the member's bytes as they are */
    RNIC_IMG_KIND_BOOL,         /* u8 0 or 1; other values: not clean */
    RNIC_IMG_KIND_BIT0,         /* bool as u8: bit 0, the others ignored */
    RNIC_IMG_KIND_REF,          /* pointer to an object: its handle, a u32 */
} RnicImageKind;

typedef struct RnicImageField {
    const char *name;           /* the member as written; NULL ends a table */
    uint32_t offset;
    uint16_t size;              /* the member's; the image's but for REF */
    uint8_t kind;               /* RnicImageKind */
    uint64_t mask;              /* UINT: the bits a load keeps */
} RnicImageField;

#define RNIC_IMG_MEMBER_SIZE(T, f) sizeof(((T *)0)->f)
/* the member's size, which must be n (else a negative array size) */
#define RNIC_IMG_SIZE_IS(T, f, n) \
    (RNIC_IMG_MEMBER_SIZE(T, f) * \
     sizeof(char[RNIC_IMG_MEMBER_SIZE(T, f) == (n) ? 1 : -1]))
#define RNIC_IMG_FIELD(T, f, n, kind, mask) \
    { #f, offsetof(T, f), RNIC_IMG_SIZE_IS(T, f, n), kind, mask }

#define RNIC_IMG_U8(T, f)   RNIC_IMG_FIELD(T, f, 1, RNIC_IMG_KIND_UINT, 0xff)
#define RNIC_IMG_U16(T, f)  RNIC_IMG_FIELD(T, f, 2, RNIC_IMG_KIND_UINT, 0xffff)
#define RNIC_IMG_U32(T, f) \
    RNIC_IMG_FIELD(T, f, 4, RNIC_IMG_KIND_UINT, 0xffffffffu)
#define RNIC_IMG_U64(T, f) \
    RNIC_IMG_FIELD(T, f, 8, RNIC_IMG_KIND_UINT, UINT64_MAX)
/* a u32 of which a load keeps the bits of mask (a PSN: its 24 bits) */
#define RNIC_IMG_U32_MASK(T, f, mask) \
    RNIC_IMG_FIELD(T, f, 4, RNIC_IMG_KIND_UINT, mask)
#define RNIC_IMG_BYTES(T, f) \
    { #f, offsetof(T, f), RNIC_IMG_MEMBER_SIZE(T, f), RNIC_IMG_KIND_BYTES, 0 }
#define RNIC_IMG_BOOL(T, f) \
    RNIC_IMG_FIELD(T, f, sizeof(bool), RNIC_IMG_KIND_BOOL, 1)
#define RNIC_IMG_BIT0(T, f) \
    RNIC_IMG_FIELD(T, f, sizeof(bool), RNIC_IMG_KIND_BIT0, 1)
/*
 * A reference: the handle of the object pointed to (the object's first
 * member, a uint32_t), RNIC_HANDLE_NONE for NULL. A load does not resolve
 * it: it sets the pointer to NULL and returns the handle (see below).
 */
#define RNIC_IMG_REF(T, f) \
    RNIC_IMG_FIELD(T, f, sizeof(void *), RNIC_IMG_KIND_REF, 0)
#define RNIC_IMG_END { NULL }

void rnic_image_put_fields(RnicImageWriter *w, const RnicImageField *f,
                           const void *obj);
/*
 * Read the fields into obj, and the handles of its REF fields into
 * handles[] in the table's order (NULL if it has none). false: the image
 * ended (r->overrun) or a BOOL field is neither 0 nor 1.
 */
bool rnic_image_get_fields(RnicImageReader *r, const RnicImageField *f,
                           void *obj, uint32_t *handles);
/* The fields of src into dst, an object of the same type. */
void rnic_image_copy_fields(const RnicImageField *f, void *dst,
                            const void *src);
/*
 * Read the fields into obj (NULL: into scratch space) and print them, one
 * "prefix.name = value" line each, as far as the image holds them.
 */
bool rnic_image_dump_fields(RnicImageReader *r, GString *out,
                            const char *prefix, const RnicImageField *f,
                            void *obj);
/* A value that is no field (a count, an index): read and printed. */
uint32_t rnic_image_dump_u32(RnicImageReader *r, GString *out,
                             const char *prefix, const char *name);
uint64_t rnic_image_dump_u64(RnicImageReader *r, GString *out,
                             const char *prefix, const char *name);

#endif /* RNIC_IMAGE_H */
