#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# net-tests.sh's -netdev tap script= (QEMU's contract: the interface's
# name as the one argument): the host's end of the guest's tap network.
set -e
ip addr add 10.0.4.1/24 dev "$1"
ip link set "$1" up
