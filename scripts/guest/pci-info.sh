# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=dash
#
# Guest-side PCI helpers (busybox sh), prepended to guest scripts by
# scripts/guest/show-device.sh and tests/guest/. Everything comes from sysfs:
# vendor/device/class files, 'resource' for the BARs and the 'config' file for
# the capability lists. Output lines are "pci: key=value ..." so tests can
# parse them and people can read them.

# Little-endian value of LEN bytes at OFFSET of config-space FILE (decimal).
pci_cfg_read() {
    local value=0 shift=0 byte
    for byte in $(od -An -v -tx1 -j "$2" -N "$3" "$1"); do
        value=$((value | (0x$byte << shift)))
        shift=$((shift + 8))
    done
    echo "$value"
}

hex() { printf '0x%x' "$1"; }

# sysfs directories of the functions with VENDOR and DEVICE (0x.... each).
pci_find() {
    local dev
    for dev in /sys/bus/pci/devices/*; do
        [ "$(cat "$dev/vendor")" = "$1" ] && [ "$(cat "$dev/device")" = "$2" ] && echo "$dev"
    done
}

pci_cap_name() {
    case $1 in
    1) echo pm ;; 5) echo msi ;; 9) echo vendor ;; 16) echo pcie ;; 17) echo msix ;;
    *) echo unknown ;;
    esac
}

pci_port_type() {
    case $1 in
    0) echo endpoint ;; 1) echo legacy-endpoint ;; 4) echo root-port ;;
    5) echo upstream-port ;; 6) echo downstream-port ;; 9) echo rc-integrated ;;
    *) echo other ;;
    esac
}

pci_ecap_name() {
    case $1 in
    1) echo aer ;; 3) echo dsn ;; 11) echo vendor ;; 13) echo acs ;; 14) echo ari ;;
    16) echo sriov ;; 24) echo ltr ;; 30) echo l1pm ;;
    *) echo unknown ;;
    esac
}

# Print identity, BARs, capabilities and extended capabilities of DEV.
pci_show() {
    local dev=$1 cfg=$1/config bar=0 start end flags kind ptr id ctrl tbl pba guard
    echo "pci: slot=${dev##*/}"
    echo "pci: vendor=$(cat "$dev/vendor") device=$(cat "$dev/device")" \
         "subsystem_vendor=$(cat "$dev/subsystem_vendor") subsystem_device=$(cat "$dev/subsystem_device")" \
         "revision=$(cat "$dev/revision")"
    echo "pci: class=$(cat "$dev/class")"
    if [ -e "$dev/driver" ]; then
        echo "pci: driver=$(basename "$(readlink "$dev/driver")")"
    else
        echo "pci: driver=none"
    fi
    # 'resource': "start end flags" for BAR 0-5, the ROM, then bridge windows.
    while read -r start end flags; do
        if [ $bar -le 5 ] && [ $((end)) -ne 0 ]; then
            kind=mem
            [ $((flags & 0x100)) -ne 0 ] && kind=io
            [ $((flags & 0x100000)) -ne 0 ] && kind=mem64
            [ $((flags & 0x2000)) -ne 0 ] && kind="$kind,prefetch"
            echo "pci: bar$bar=$(hex $((start))) size=$(hex $((end - start + 1))) type=$kind"
        fi
        bar=$((bar + 1))
    done <"$dev/resource"
    # Capability list: status bit 4, pointer at 0x34, entries "id next ...".
    if [ $(($(pci_cfg_read "$cfg" 6 2) & 0x10)) -ne 0 ]; then
        ptr=$(($(pci_cfg_read "$cfg" 0x34 1) & 0xfc))
        guard=0
        while [ $ptr -ne 0 ] && [ $guard -lt 48 ]; do
            id=$(pci_cfg_read "$cfg" $ptr 1)
            case $id in
            17) # MSI-X: control (table size - 1, enable bit 15), table and PBA BIR/offset
                ctrl=$(pci_cfg_read "$cfg" $((ptr + 2)) 2)
                tbl=$(pci_cfg_read "$cfg" $((ptr + 4)) 4)
                pba=$(pci_cfg_read "$cfg" $((ptr + 8)) 4)
                echo "pci: cap=$(hex $ptr) id=$(hex $id) name=msix table_size=$(((ctrl & 0x7ff) + 1))" \
                     "table=bar$((tbl & 7))+$(hex $((tbl & ~7)))" \
                     "pba=bar$((pba & 7))+$(hex $((pba & ~7))) enabled=$(((ctrl >> 15) & 1))"
                ;;
            5)  ctrl=$(pci_cfg_read "$cfg" $((ptr + 2)) 2)
                echo "pci: cap=$(hex $ptr) id=$(hex $id) name=msi vectors=$((1 << ((ctrl >> 1) & 7)))" \
                     "64bit=$(((ctrl >> 7) & 1)) enabled=$((ctrl & 1))"
                ;;
            16) ctrl=$(pci_cfg_read "$cfg" $((ptr + 2)) 2)
                echo "pci: cap=$(hex $ptr) id=$(hex $id) name=pcie version=$((ctrl & 0xf))" \
                     "type=$(pci_port_type $(((ctrl >> 4) & 0xf)))"
                ;;
            *)  echo "pci: cap=$(hex $ptr) id=$(hex $id) name=$(pci_cap_name $id)" ;;
            esac
            ptr=$(($(pci_cfg_read "$cfg" $((ptr + 1)) 1) & 0xfc))
            guard=$((guard + 1))
        done
    fi
    # Extended capabilities (PCIe, 4 KiB config space): "id:16 version:4 next:12".
    if [ "$(wc -c <"$cfg")" -gt 256 ]; then
        ptr=256
        guard=0
        while [ $ptr -ne 0 ] && [ $guard -lt 64 ]; do
            ctrl=$(pci_cfg_read "$cfg" $ptr 4)
            [ $ctrl -eq 0 ] && break
            id=$((ctrl & 0xffff))
            echo "pci: ecap=$(hex $ptr) id=$(hex $id) name=$(pci_ecap_name $id) version=$(((ctrl >> 16) & 0xf))"
            ptr=$(((ctrl >> 20) & 0xffc))
            guard=$((guard + 1))
        done
    fi
    echo "pci: irq=$(cat "$dev/irq")"
}
