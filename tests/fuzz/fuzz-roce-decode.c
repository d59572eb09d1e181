/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as an Ethernet frame into
 * rnic_roce_decode(). Besides "no crash, no out-of-bounds read" it checks:
 *  - a frame that fails only on its ICRC decodes once the ICRC is fixed;
 *  - a decoded frame re-encodes to a frame that decodes to the same fields;
 *  - the payload view lies inside the frame.
 *
 * Seeds (fuzz-common.h): the target first writes a few valid frames of
 * different opcodes into the corpus directory:
 *   ./fuzz-roce-decode corpus -max_total_time=60
 */
#include "fuzz-common.h"
#include "rnic-roce.h"

static void write_seeds(const char *dir)
{
    static const struct {
        uint8_t opcode;
        bool v6, vlan;
        uint32_t plen;
    } seeds[] = {
        { 0x04, false, false, 16 },
        { 0x0b, true, true, 33 },
        { 0x0c, false, false, 0 },
        { 0x11, false, true, 0 },
        { 0x12, true, false, 0 },
        { 0x13, false, false, 0 },
        { 0x17, false, false, 5 },
        { 0x1c, false, false, 0 },
        { 0x65, true, false, 64 },
        { 0x81, false, false, 0 },
    };
    static uint8_t payload[64];

    for (unsigned i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        uint8_t frame[256];
        RnicRoceHdr h;
        size_t len;

        memset(&h, 0, sizeof(h));
        h.opcode = seeds[i].opcode;
        h.ipv6 = seeds[i].v6;
        h.vlan_present = seeds[i].vlan;
        h.vlan_id = 7;
        h.sgid[10] = h.sgid[11] = h.dgid[10] = h.dgid[11] = 0xff;
        h.sgid[12] = 10;
        h.dgid[12] = 10;
        h.dgid[15] = 2;
        h.hop_limit = 64;
        h.pkey = 0xffff;
        h.dest_qp = 0x11 + i;
        h.psn = 100 + i;
        h.udp_sport = 0xc000 + i;
        h.payload = payload;
        h.payload_len = seeds[i].plen;
        if (rnic_roce_encode_linear(&h, frame, sizeof(frame), &len) !=
            RNIC_ROCE_OK) {
            abort();
        }
        fuzz_write_seed(dir, frame, len);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_seeds(*argc, *argv, write_seeds);
    return 0;
}

static void check_same(const RnicRoceHdr *a, const RnicRoceHdr *b)
{
    CHECK(!memcmp(a->dmac, b->dmac, 6) && !memcmp(a->smac, b->smac, 6));
    CHECK(a->vlan_present == b->vlan_present && a->vlan_id == b->vlan_id &&
          a->vlan_pcp == b->vlan_pcp && a->vlan_dei == b->vlan_dei);
    CHECK(a->ipv6 == b->ipv6);
    CHECK(!memcmp(a->sgid, b->sgid, 16) && !memcmp(a->dgid, b->dgid, 16));
    CHECK(a->traffic_class == b->traffic_class &&
          a->flow_label == b->flow_label && a->hop_limit == b->hop_limit &&
          a->ip_id == b->ip_id);
    CHECK(a->udp_sport == b->udp_sport && a->udp_dport == b->udp_dport);
    CHECK(a->opcode == b->opcode && a->se == b->se &&
          a->migreq == b->migreq && a->pad == b->pad && a->tver == b->tver &&
          a->pkey == b->pkey && a->fecn == b->fecn && a->becn == b->becn &&
          a->dest_qp == b->dest_qp && a->ack_req == b->ack_req &&
          a->psn == b->psn);
    CHECK(a->ext == b->ext);
    CHECK(a->reth.va == b->reth.va && a->reth.rkey == b->reth.rkey &&
          a->reth.dma_len == b->reth.dma_len);
    CHECK(a->aeth.syndrome == b->aeth.syndrome && a->aeth.msn == b->aeth.msn);
    CHECK(a->atomic_eth.va == b->atomic_eth.va &&
          a->atomic_eth.rkey == b->atomic_eth.rkey &&
          a->atomic_eth.swap_add == b->atomic_eth.swap_add &&
          a->atomic_eth.compare == b->atomic_eth.compare);
    CHECK(a->atomic_ack_eth.orig == b->atomic_ack_eth.orig);
    CHECK(a->immdt == b->immdt && a->ieth.rkey == b->ieth.rkey);
    CHECK(a->deth.qkey == b->deth.qkey && a->deth.src_qp == b->deth.src_qp);
    CHECK(a->feth.sel == b->feth.sel && a->feth.plt == b->feth.plt);
    CHECK(a->payload_len == b->payload_len &&
          !memcmp(a->payload, b->payload, a->payload_len));
}

static void check_decoded(const uint8_t *frame, size_t size,
                          const RnicRoceHdr *h)
{
    static uint8_t out[RNIC_ROCE_HDR_MAX + 65536 + RNIC_ROCE_TRAILER_MAX];
    uint8_t grh[RNIC_ROCE_GRH_LEN];
    RnicRoceHdr d;
    size_t len;

    CHECK(h->frame_len <= size);
    CHECK(h->payload >= frame && h->payload + h->payload_len <= frame + size);
    rnic_roce_build_grh(h, grh);

    CHECK(rnic_roce_encode_linear(h, out, sizeof(out), &len) == RNIC_ROCE_OK);
    CHECK(rnic_roce_decode(out, len, &d) == RNIC_ROCE_OK);
    check_same(h, &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    RnicRoceHdr h;
    RnicRoceError err = rnic_roce_decode(data, size, &h);

    CHECK((unsigned)err < RNIC_ROCE_ERR_INVALID);
    if (err == RNIC_ROCE_OK) {
        check_decoded(data, size, &h);
    } else if (err == RNIC_ROCE_ERR_ICRC) {
        /* Everything else was valid: with the right ICRC it decodes. */
        uint8_t *copy = malloc(size);
        const uint8_t *ip = data + h.l3_offset;
        size_t ip_len = h.ipv6 ? 40 + (ip[4] << 8 | ip[5])
                               : (size_t)(ip[2] << 8 | ip[3]);
        uint32_t crc;

        memcpy(copy, data, size);
        /* a non-zero UDP checksum would cover the old ICRC: drop it */
        copy[h.l3_offset + (h.ipv6 ? 40 : 20) + 6] = 0;
        copy[h.l3_offset + (h.ipv6 ? 40 : 20) + 7] = 0;
        crc = rnic_roce_icrc(copy + h.l3_offset, h.ipv6, ip_len - 4);
        copy[h.l3_offset + ip_len - 4] = crc;
        copy[h.l3_offset + ip_len - 3] = crc >> 8;
        copy[h.l3_offset + ip_len - 2] = crc >> 16;
        copy[h.l3_offset + ip_len - 1] = crc >> 24;
        CHECK(rnic_roce_decode(copy, size, &h) == RNIC_ROCE_OK);
        check_decoded(copy, size, &h);
        free(copy);
    }
    return 0;
}
