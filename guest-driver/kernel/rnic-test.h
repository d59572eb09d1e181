/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hooks rnic.ko exports for its kernel test module (test/rnic_ktest.c):
 * feed the device malformed admin commands and doorbells on purpose.
 * They refuse any ib_device that is not driven by rnic.ko.
 */
#ifndef RNIC_TEST_H
#define RNIC_TEST_H

#include <rdma/ib_verbs.h>

int rnic_test_raw_cmd(struct ib_device *ibdev, const void *cmd, u8 *status);
int rnic_test_raw_doorbell(struct ib_device *ibdev, u32 offset, u64 value);
u32 rnic_test_pd_handle(struct ib_pd *pd);

#endif /* RNIC_TEST_H */
