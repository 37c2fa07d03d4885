#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpora under tests/fuzz/corpus/<target>/.

Each seed is a small valid input in the layout the target's header comment
describes, so the fuzzers start from inputs that get past the first checks.
Run it again after changing a layout: tests/fuzz/make-seeds.py
"""
import os
import struct
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')

NEXT, WRITE, INDIRECT = 1, 2, 4
P_AVAIL, P_USED = 1 << 7, 1 << 15


def put(ram, off, data):
    if len(ram) < off + len(data):
        ram.extend(b'\0' * (off + len(data) - len(ram)))
    ram[off:off + len(data)] = data


def split_desc(addr, length, flags, nxt):
    return struct.pack('<QIHH', addr, length, flags, nxt)


def packed_desc(addr, length, bid, flags):
    return struct.pack('<QIHH', addr, length, bid, flags)


def split_ring(num, chains, indirect_tables=(), ram_extra=0):
    """chains: lists of (addr, len, flags) descriptors; returns RAM bytes."""
    ram = bytearray()
    avail = 16 * num
    used = (avail + 6 + 2 * num + 3) & ~3
    slot = 0
    heads = []
    for chain in chains:
        heads.append(slot)
        for i, (addr, length, flags) in enumerate(chain):
            last = i == len(chain) - 1
            put(ram, 16 * slot, split_desc(addr, length,
                                           flags | (0 if last else NEXT), slot + 1))
            slot += 1
    put(ram, avail, struct.pack('<HH', 0, len(heads)))
    for i, h in enumerate(heads):
        put(ram, avail + 4 + 2 * i, struct.pack('<H', h))
    for addr, descs in indirect_tables:
        for i, (a, length, flags) in enumerate(descs):
            last = i == len(descs) - 1
            put(ram, addr + 16 * i, split_desc(a, length,
                                               flags | (0 if last else NEXT), i + 1))
    put(ram, used + 4 + 8 * num + 2 + ram_extra, b'\0')
    return ram, avail, used


def packed_ring(num, chains, indirect_tables=()):
    ram = bytearray()
    slot = 0
    for bid, chain in enumerate(chains):
        for i, (addr, length, flags) in enumerate(chain):
            last = i == len(chain) - 1
            put(ram, 16 * slot, packed_desc(addr, length, bid if last else 0,
                                            flags | P_AVAIL | (0 if last else NEXT)))
            slot += 1
    for addr, descs in indirect_tables:
        for i, (a, length, flags) in enumerate(descs):
            put(ram, addr + 16 * i, packed_desc(a, length, 0, flags))
    driver = 16 * num
    put(ram, driver + 8, b'\0')
    return ram, driver, driver + 4


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(bytes(data))


def vq_seeds():
    num = 8
    bufs = [(0x400, 16, 0), (0x410, 64, WRITE), (0x450, 1, WRITE)]
    table = 0x300
    for flags in (0, 1, 2, 3 | 4, 8 | 2):
        ram, avail, used = split_ring(num, [bufs, [(0x500, 32, 0)],
                                            [(table, 48, INDIRECT)]],
                                      [(table, bufs)])
        ram.extend(b'\0' * (0x600 - len(ram)))
        hdr = struct.pack('<BBHIIIB', 3, flags, 0, 0, avail, used, 2)
        write('fuzz-split-pop', 'chains-%d' % flags, hdr + ram)
        ram, drv, dev = packed_ring(num, [bufs, [(0x500, 32, 0)],
                                          [(table, 48, INDIRECT)]], [(table, bufs)])
        ram.extend(b'\0' * (0x600 - len(ram)))
        hdr = struct.pack('<BBHIIIB', 3, flags, 0, 0, drv, dev, 2)
        write('fuzz-packed-pop', 'chains-%d' % flags, hdr + ram)
    # A driver that offers the same chains again, never waiting for them
    # to come back, to a device that completes in batches: more in use
    # than the ring holds, which pop must refuse (batch byte 15: 16 each).
    ones = [[(0x400, 16, 0)], [(0x500, 16, WRITE)]]
    ram, avail, used = split_ring(2, ones)
    ram.extend(b'\0' * (0x600 - len(ram)))
    write('fuzz-split-pop', 'reoffer-batch',
          struct.pack('<BBHIIIB', 1, 4 | 16, 0, 0, avail, used, 15) + ram)
    ram, drv, dev = packed_ring(2, ones)
    ram.extend(b'\0' * (0x600 - len(ram)))
    write('fuzz-packed-pop', 'reoffer-batch',
          struct.pack('<BBHIIIB', 1, 4 | 16, 0, 0, drv, dev, 15) + ram)
    # RAM in two regions cut at 0x400, right where the buffers start.
    ram, avail, used = split_ring(num, [bufs])
    ram.extend(b'\0' * (0x600 - len(ram)))
    write('fuzz-split-pop', 'two-regions',
          struct.pack('<BBHIIIB', 3, 0, 0x400, 0, avail, used, 1) + ram)
    ram, drv, dev = packed_ring(num, [bufs])
    ram.extend(b'\0' * (0x600 - len(ram)))
    write('fuzz-packed-pop', 'two-regions',
          struct.pack('<BBHIIIB', 3, 0, 0x400, 0, drv, dev, 1) + ram)


def blk_seeds():
    num = 8
    hdr_at, data_at, st_at, table = 0x800, 0x1000, 0xf00, 0x600

    def req(rtype, sector, extra=b''):
        return struct.pack('<IIQ', rtype, 0, sector) + extra

    reqs = {
        'read': (req(0, 1), [(data_at, 1024, WRITE)]),
        'write': (req(1, 2), [(data_at, 512, 0)]),
        'flush': (req(4, 0), []),
        'get-id': (req(8, 0), [(data_at, 20, WRITE)]),
        'discard': (req(11, 0, struct.pack('<QII', 8, 8, 0)), []),
        'write-zeroes': (req(13, 0, struct.pack('<QII', 16, 8, 1)), []),
        'bad-sector': (req(0, 1 << 40), [(data_at, 512, WRITE)]),
    }
    for name, (hdr, data) in reqs.items():
        for packed in (0, 1):
            chain = [(hdr_at, len(hdr), 0)] + data + [(st_at, 1, WRITE)]
            if packed:
                ram, _, _ = packed_ring(num, [chain])
            else:
                ram, _, _ = split_ring(num, [chain])
            put(ram, hdr_at, hdr)
            ram.extend(b'\0' * (data_at + 0x400 - len(ram)))
            flags = packed | 2 | 4
            write('fuzz-virtio-blk', '%s-%s' % (name, 'packed' if packed else 'split'),
                  bytes([flags, 3]) + ram)
    # Two requests at once, one through an indirect table; threads backend.
    rd, wr = reqs['read'], reqs['write']
    ind = [(hdr_at + 0x40, 16, 0), (data_at + 0x200, 512, 0), (st_at + 1, 1, WRITE)]
    for packed in (0, 1):
        chains = [[(hdr_at, 16, 0)] + rd[1] + [(st_at, 1, WRITE)],
                  [(table, 48, INDIRECT)]]
        if packed:
            ram, _, _ = packed_ring(num, chains, [(table, ind)])
        else:
            ram, _, _ = split_ring(num, chains, [(table, ind)])
        put(ram, hdr_at, rd[0])
        put(ram, hdr_at + 0x40, wr[0])
        ram.extend(b'\0' * (data_at + 0x400 - len(ram)))
        kind = 'packed' if packed else 'split'
        write('fuzz-virtio-blk', 'indirect-%s' % kind, bytes([packed | 4 | 8, 3]) + ram)
        # Reset with both in flight, then the device set up and run again.
        write('fuzz-virtio-blk', 'reset-%s' % kind, bytes([packed | 4 | 32, 3]) + ram)
        # The same chains offered again and again without waiting.
        write('fuzz-virtio-blk', 'reoffer-%s' % kind, bytes([packed | 4 | 8, 3 | 16]) + ram)
    # A write in flight across a reset, on both backends.
    for packed in (0, 1):
        chain = [(hdr_at, 16, 0), (data_at, 4096, 0), (st_at, 1, WRITE)]
        if packed:
            ram, _, _ = packed_ring(num, [chain])
        else:
            ram, _, _ = split_ring(num, [chain])
        put(ram, hdr_at, req(1, 8))
        ram.extend(b'\0' * (data_at + 0x1000 - len(ram)))
        kind = 'packed' if packed else 'split'
        write('fuzz-virtio-blk', 'reset-write-%s' % kind, bytes([packed | 32, 3]) + ram)
        write('fuzz-virtio-blk', 'reset-write-threads-%s' % kind,
              bytes([packed | 8 | 32, 3]) + ram)


def vu_seeds():
    """A QEMU-like vhost-user session on one ring with a request in it."""
    num, uva = 16, 0x7f0000000000
    hdr_at, data_at, st_at = 0x800, 0x1000, 0xf00

    def msg(req, payload=b'', flags=1, spec=0):
        m = struct.pack('<III', req, flags, len(payload)) + payload
        return bytes([spec]) + struct.pack('<H', len(m)) + m

    def state(i, n):
        return struct.pack('<II', i, n)

    # shrink: the front end truncates its memory right after the kick fd
    # (the request is in flight); 32 in the first byte makes it sealable.
    # inflight: an INFLIGHT_SHMFD region in the (sealed) RAM memfd at
    # ifl_at, left by a back-end that had taken head 0 and not used it.
    ifl_at = 0x8000
    for name, packed, rtype, ack, shrink, fl, inflight in (
            ('read-split', 0, 0, 0, 0, 2, 0), ('read-packed', 1, 0, 0, 0, 2, 0),
            ('write-split-ack', 0, 1, 8, 0, 2, 0), ('write-packed-ack', 1, 1, 8, 0, 2, 0),
            ('write-split-shrink', 0, 1, 8, 16, 2, 0),
            ('write-split-sealed-shrink', 0, 1, 8, 16, 2 | 32, 0),
            ('write-split-inflight', 0, 1, 8, 0, 2 | 32, 1)):
        chain = [(hdr_at, 16, 0), (data_at, 512, 0 if rtype else WRITE), (st_at, 1, WRITE)]
        if packed:
            ram, drv, dev = packed_ring(num, [chain])
        else:
            ram, drv, dev = split_ring(num, [chain])
        put(ram, hdr_at, struct.pack('<IIQ', rtype, 0, 1))
        ram.extend(b'\0' * (data_at + 0x200 - len(ram)))
        if inflight:
            # version 1, 16 entries, used index 0; head 0 taken (counter 5)
            put(ram, ifl_at, struct.pack('<QHHHH', 0, 1, num, 0, 0) +
                struct.pack('<B5xHQ', 1, 0, 5))
        feats = 1 << 32 | 1 << 30 | 1 << 29 | 1 << 28 | 1 << 9 | packed << 34
        base = 0x80008000 if packed else 0
        f = 1 | ack
        ifl = msg(32, struct.pack('<QQHH4x', 16 + 16 * num, ifl_at, 1, num), f,
                  spec=1) if inflight else b''
        stream = b''.join([
            msg(1), msg(15), msg(16, struct.pack('<Q', 0x3209 if inflight else 0x2209)),
            msg(17), msg(3, flags=f),
            msg(24, struct.pack('<III', 0, 57, 0) + b'\0' * 57),
            msg(2, struct.pack('<Q', feats), f),
            msg(5, struct.pack('<II', 1, 0) + struct.pack('<QQQQ', 0, 0x10000, uva, 0),
                f, spec=1),
            ifl,
            msg(8, state(0, num), f), msg(10, state(0, base), f),
            msg(9, struct.pack('<IIQQQQ', 0, 0, uva, uva + dev, uva + drv, 0), f),
            msg(13, struct.pack('<Q', 0), f, spec=1 | 1 << 2),
            msg(14, struct.pack('<Q', 0), f, spec=1 | 1 << 2),
            msg(12, struct.pack('<Q', 0), f, spec=1 | 1 << 2 | shrink),
            msg(18, state(0, 1), f), msg(11, state(0, 0)), msg(34, flags=f),
        ])
        write('fuzz-vhost-user', name,
              bytes([fl]) + struct.pack('<H', len(ram)) + ram + stream)


def pci_seeds():
    def cfg_addr(reg, slot=1):
        return bytes([0]) + struct.pack('<I', 0x80000000 | slot << 11 | reg)

    def cfg_read(width=4):
        return bytes([2 | {1: 0, 2: 1, 4: 2}[width] << 3])

    def cfg_write(val, width=4):
        return bytes([1 | {1: 0, 2: 1, 4: 2}[width] << 3]) + struct.pack('<I', val)

    def bar4_write(off, val, width):
        return bytes([3 | {1: 0, 2: 1, 4: 2, 8: 3}[width] << 3]) + \
            struct.pack('<HQ', off, val)

    def bar4_read(off, width):
        return bytes([4 | {1: 0, 2: 1, 4: 2, 8: 3}[width] << 3]) + struct.pack('<H', off)

    def msix_write(off, val, width=4):
        return bytes([5 | {1: 0, 2: 1, 4: 2, 8: 3}[width] << 3]) + \
            struct.pack('<HQ', off, val)

    probe = b''.join(cfg_addr(r) + cfg_read() for r in range(0, 0x100, 4))
    sizing = cfg_addr(0x20) + cfg_write(0xffffffff) + cfg_read() + \
        cfg_addr(0x24) + cfg_write(0xffffffff) + cfg_read() + \
        cfg_addr(0x20) + cfg_write(0xd0000000) + cfg_addr(0x24) + cfg_write(0)
    driver = (bar4_write(0x14, 1, 1) + bar4_write(0x14, 3, 1) +
              bar4_write(0x00, 0, 4) + bar4_read(0x04, 4) +
              bar4_write(0x08, 1, 4) + bar4_write(0x0c, 1, 4) +
              bar4_write(0x14, 0xb, 1) + bar4_read(0x14, 1) +
              bar4_write(0x16, 0, 2) + bar4_write(0x18, 8, 2) +
              bar4_write(0x10, 0, 2) + bar4_write(0x1a, 1, 2) +
              bar4_write(0x20, 0x1000, 8) + bar4_write(0x28, 0x2000, 8) +
              bar4_write(0x30, 0x3000, 8) + bar4_write(0x1c, 1, 2) +
              bar4_write(0x14, 0xf, 1) + bar4_write(0x3000, 0, 2) +
              bar4_read(0x1000, 1) + bar4_read(0x2000, 8))
    # MSI-X: capability at 0x40 + 4 * 16 bytes of virtio caps; find it by probe.
    msix = (cfg_addr(0x94) + cfg_read() +
            msix_write(0, 0xfee00000) + msix_write(8, 0x41) + msix_write(12, 0) +
            msix_write(16, 0xfee00000) + msix_write(28, 0))
    pci_cfg = cfg_addr(0x84) + cfg_write(4, 1) + cfg_addr(0x88) + cfg_write(0x14) + \
        cfg_addr(0x8c) + cfg_write(1) + cfg_addr(0x90) + cfg_read(1)
    write('fuzz-virtio-pci', 'probe', bytes([0, 2, 0]) + probe)
    write('fuzz-virtio-pci', 'bar-sizing', bytes([0, 2, 0]) + sizing + bar4_read(0, 4))
    write('fuzz-virtio-pci', 'driver-split', bytes([6, 2, 0]) + driver)
    write('fuzz-virtio-pci', 'driver-packed', bytes([7, 2, 1]) + driver + msix)
    write('fuzz-virtio-pci', 'pci-cfg-window', bytes([0, 2, 1]) + pci_cfg + driver[:20])


def fake_bzimage(size=0x2000, version=0x020f, init_size=0x100000,
                 pref=0x100000, cmdline_size=2047, initrd_max=0x37ffffff):
    img = bytearray(size)
    img[0x1f1] = 4
    img[0x1fe:0x200] = b'\x55\xaa'
    img[0x201] = 0x66
    img[0x202:0x206] = b'HdrS'
    img[0x206:0x208] = struct.pack('<H', version)
    img[0x211] = 1
    img[0x22c:0x230] = struct.pack('<I', initrd_max)
    img[0x236:0x238] = struct.pack('<H', 3)
    img[0x238:0x23c] = struct.pack('<I', cmdline_size)
    img[0x258:0x260] = struct.pack('<Q', pref)
    img[0x260:0x264] = struct.pack('<I', init_size)
    return img


def bz_seeds():
    def seed(ram_mib, initrd16, cmdline_len, img):
        return struct.pack('<BHH', ram_mib - 2, initrd16, cmdline_len) + img

    write('fuzz-bzimage', 'plain', seed(16, 0, 20, fake_bzimage()))
    write('fuzz-bzimage', 'initrd', seed(8, 4096, 100, fake_bzimage(init_size=0x200000)))
    write('fuzz-bzimage', 'high-pref', seed(32, 16, 0, fake_bzimage(pref=0x1000000)))
    write('fuzz-bzimage', 'initrd-max-low',
          seed(4, 256, 10, fake_bzimage(initrd_max=0x1fffff)))
    write('fuzz-bzimage', 'old-protocol', seed(16, 0, 0, fake_bzimage(version=0x020b)))
    write('fuzz-bzimage', 'too-big', seed(2, 0, 0, fake_bzimage(init_size=0x800000)))


def cli_seeds():
    def argv(*a):
        return b'\0'.join(x.encode() for x in a)

    write('fuzz-cli', 'minimal', argv('-kernel', 'bz'))
    write('fuzz-cli', 'full', argv('-kernel', 'bz', '-initrd', 'i', '-append', 'console=ttyS0',
                                   '-m', '1G', '-smp', '2', '-serial', 'none',
                                   '-device', 'isa-debug-exit,iobase=0xf4,iosize=4',
                                   '-timeout', '30', '-nographic', '-name', 'g'))
    write('fuzz-cli', 'drive-virtio', argv('-kernel', 'bz', '-drive',
                                           'file=disk.img,if=virtio,format=raw,cache=none,aio=threads'))
    write('fuzz-cli', 'drive-device', argv(
        '-kernel', 'bz', '-drive', 'file=a,,b.img,if=none,id=d0,readonly=on',
        '-device', 'virtio-blk-pci,drive=d0,packed=on,num-queues=4,queue-size=128,'
        'serial=abc,event_idx=off,indirect_desc=off,poll-us=0,iothreads=2,irq-coalesce-us=100,irq-interval-us=200,'
        'logical_block_size=4096,physical_block_size=65536'))
    write('fuzz-cli', 'driver-form', argv('-kernel', 'bz', '-drive', 'file=x,if=none,id=a',
                                          '-device', 'driver=virtio-blk-pci,drive=a'))
    write('fuzz-cli', 'vhost-user-blk-pci', argv(
        '-kernel', 'bz', '-chardev', 'socket,id=c0,path=/run/d0.sock,reconnect=1',
        '-device', 'vhost-user-blk-pci,chardev=c0,num-queues=2,queue-size=128,packed=on',
        '-chardev', 'socket,id=c1,fd=3', '-device', 'driver=vhost-user-blk-pci,chardev=c1'))
    write('fuzz-cli', 'help', argv('--help'))
    # The option tables: every option list, a device from the table, help.
    write('fuzz-cli', 'opts', argv(
        '-kernel', 'bz', '-m', 'size=1G', '-smp', 'cpus=2', '-machine', 'q35,accel=kvm:tcg',
        '-accel', 'kvm,check=off', '-rtc', 'base=localtime,clock=host',
        '-action', 'panic=none,reboot=shutdown', '-device', 'pvpanic',
        '-device', 'virtio-rng-pci,max-bytes=1024,period=1000',
        '-device', 'driver=virtio-rng-pci', '-timeout', 'seconds=010'))
    write('fuzz-cli', 'device-help', argv('-device', 'virtio-blk-pci,help'))
    write('fuzz-cli', 'export', argv(
        '-drive', 'file=d.img,if=none,id=d0,cache=none', '-drive', 'file=e.img,if=none,id=d1',
        '-export', 'vhost-user-blk,id=e0,drive=d0,addr.path=/run/d0.sock,num-queues=2,'
        'writable=on,queue-size=128,poll-us=50,iothreads=2,serial=x',
        '-export', 'type=vhost-user-blk,id=e1,node-name=d1,addr.type=unix,addr.path=s'))


def net_seeds():
    """fuzz-virtio-net: a driver's operations (see the target's header)."""
    RX, TX, WILD, KICK, FRAME, TURN, RESET, CONFIG, SUPPRESS, REFUSE, SPURIOUS, FILL = range(12)

    def hdr(dev, feat, rxs, txs, more=0):
        return bytes([dev, feat, rxs, txs, more])

    def rx(descs, indirect=False, kick=True):
        """descs: (len, readable) pairs."""
        out = bytes([RX, (len(descs) - 1) | indirect << 3 | kick << 4])
        for length, readable in descs:
            out += struct.pack('<BH', (length >> 16) | (6 if readable else 0), length & 0xffff)
        return out

    def fill(count, length):
        return struct.pack('<BBBH', FILL, count - 1, length >> 16, length & 0xffff)

    def tx(total, cuts=(), indirect=False, kick=True, writable=None):
        shape = len(cuts) | indirect << 3 | kick << 4 | (writable is not None) << 5
        out = struct.pack('<BBBH', TX, shape, total >> 16, total & 0xffff)
        out += b''.join(struct.pack('<H', c) for c in cuts)
        if writable is not None:
            out += struct.pack('<H', writable)
        return out

    def frame(length):
        v = length - 1
        return struct.pack('<BBH', FRAME, v >> 16, v & 0xffff)

    def wild(queue, what, where, addr, length, a, b):
        return struct.pack('<BBBQIHH', WILD, queue | what << 1, where, addr, length, a, b)

    turn = bytes([TURN])
    all_feats = 2 | 4 | 8 | 16          # EVENT_IDX, INDIRECT, MRG_RXBUF, MAC...
    traffic = (fill(16, 1526) + frame(60) + frame(1000) + frame(9000) +
               tx(12 + 100, (5,)) + tx(12 + 1514, (12, 600, 1000), indirect=True) + turn +
               fill(8, 2048) + frame(1514) + turn)
    write('fuzz-virtio-net', 'mrg-split', hdr(2 | 4, all_feats, 5, 5) + traffic)
    write('fuzz-virtio-net', 'mrg-packed', hdr(1 | 2 | 4, all_feats | 1, 32, 24) + traffic)
    # One chain per frame: one too short (dropped), an indirect one.
    one = (rx([(2048, False)]) + frame(1000) +
           rx([(5, False), (7, False), (1500, False)], indirect=True) + frame(1400) +
           rx([(100, False)]) + frame(3000) + turn + rx([(4096, False)]) + frame(60) + turn)
    write('fuzz-virtio-net', 'one-split', hdr(2 | 4, 2 | 4 | 16, 4, 4) + one)
    write('fuzz-virtio-net', 'one-packed', hdr(1 | 2 | 4, 1 | 2 | 4 | 16, 16, 16) + one)
    # The largest frames over many buffers; one that never fits a full ring.
    write('fuzz-virtio-net', 'jumbo', hdr(2, 2 | 8, 7, 3) + fill(64, 1526) + frame(70000) +
          turn + frame(65549) + turn + fill(64, 1526) + turn)
    write('fuzz-virtio-net', 'jumbo-no-fit', hdr(1, 1 | 8, 8, 8) + fill(8, 1526) +
          frame(70000) + turn)
    # Reset with buffers held and frames waiting, then on other features.
    write('fuzz-virtio-net', 'reset', hdr(1 | 2 | 4, all_feats, 4, 4) + fill(4, 1000) +
          frame(3000) + turn + tx(12 + 60) + bytes([RESET, 1 | 2 | 4 | 16, 8, 3]) +
          rx([(4000, False)]) + turn + tx(12 + 1000, (3, 30)) + turn)
    # Drops: short, too long, the largest allowed, refused by the back end.
    write('fuzz-virtio-net', 'tx-drops', hdr(0, 2 | 16, 3, 5) + tx(12 + 13) +
          tx(12 + 65550, (40000,)) + tx(12 + 65549, (1, 2, 3, 4, 5, 6, 60000)) +
          bytes([REFUSE]) + tx(12 + 100) + bytes([REFUSE]) + tx(12) + tx(12 + 14) + turn)
    write('fuzz-virtio-net', 'no-backend', hdr(16 | 4, 4 | 8, 3, 3) + tx(12 + 100) +
          frame(100) + fill(2, 100) + turn)
    # Rules broken: a readable receive buffer, one shorter than the
    # header, a writable transmit one; then a reset and on again.
    write('fuzz-virtio-net', 'bad-chains', hdr(2 | 4, all_feats, 3, 3) +
          rx([(8, False)]) + frame(100) + turn + bytes([RESET, all_feats, 3, 3]) +
          rx([(64, True), (2000, False)]) + frame(100) + turn +
          bytes([RESET, all_feats, 3, 3]) + tx(12 + 50, writable=100) + turn)
    # Raw descriptors and ring entries: outside RAM, looping, nested tables.
    write('fuzz-virtio-net', 'wild-split', hdr(2 | 4, 2 | 4 | 8, 3, 3) +
          wild(0, 0, 0, 0x4b000, 0x2000, 3, 0) + wild(0, 1, 0, 0, 0, 0, 0) + frame(1000) +
          turn + bytes([RESET, 4 | 8, 3, 3]) +
          wild(1, 0, 1, 0x34000, 64, 1, 1) + wild(1, 0, 2, 0x4000, 32, 4, 0) +
          wild(1, 3, 0, 0x34000, 100, 0, 0) + wild(1, 1, 0, 0, 0, 1, 0) +
          bytes([KICK, 1]) + turn)
    write('fuzz-virtio-net', 'wild-packed', hdr(1 | 4, 1 | 4 | 8, 3, 3) +
          wild(0, 1, 0, 0xff00000000000000, 100, 0, 2) + frame(100) + turn +
          bytes([RESET, 1 | 4, 3, 3]) + wild(1, 1, 0, 0x4000, 48, 0, 4) +
          wild(1, 3, 0, 0x4000, 16, 0, 4) + bytes([KICK, 1]) + turn)
    # A back end with recv (a tap's): frames read straight into buffers
    # that take the longest, then fewer left (copied), a big chain without
    # MRG_RXBUF, frames over the MTU dropped after the read.
    write('fuzz-virtio-net', 'direct-split', hdr(128 | 2 | 4, all_feats, 7, 5) + traffic +
          fill(64, 1526) + frame(70000) + frame(14) + frame(65549) + turn)
    write('fuzz-virtio-net', 'direct-packed', hdr(128 | 1 | 2 | 4, all_feats | 1, 64, 24) +
          fill(64, 1526) + frame(1000) + frame(70000) + turn + frame(60) + turn)
    write('fuzz-virtio-net', 'direct-one', hdr(128 | 2, 2 | 16, 4, 4) +
          rx([(12, False), (65536, False), (5000, False)]) + frame(70000) +
          rx([(2048, False)]) + frame(1000) + turn)
    write('fuzz-virtio-net', 'direct-mtu', hdr(128 | 8 | 2, all_feats, 7, 3) +
          fill(64, 1526) + frame(1515) + frame(1514) + frame(9000) + frame(60) + turn)
    # tx=timer: frames queued during the wait, a kick during it, a wait
    # that ends with a full round (a full ring of 16), a reset while on.
    timer = (tx(12 + 100, kick=True) + tx(12 + 200, kick=False) + turn +
             tx(12 + 60, kick=True) + tx(12 + 70, kick=True) + turn +
             b''.join(tx(12 + 60, kick=False) for _ in range(15)) + tx(12 + 60) + turn +
             tx(12 + 80) + bytes([RESET, all_feats, 4, 4]) + turn + tx(12 + 90) + turn)
    write('fuzz-virtio-net', 'timer-split', hdr(2 | 4, all_feats, 5, 4, 1) + timer)
    write('fuzz-virtio-net', 'timer-packed', hdr(1 | 2 | 4, all_feats | 1, 32, 16, 1) + timer)
    # A back end busy with each frame it takes (x-txhold): the same steps.
    write('fuzz-virtio-net', 'hold-split', hdr(2 | 4, all_feats, 5, 4, 2) + timer)
    write('fuzz-virtio-net', 'hold-packed', hdr(1 | 2 | 4, all_feats | 1, 32, 16, 2) + timer)
    write('fuzz-virtio-net', 'hold-noevent', hdr(4, all_feats & ~2, 5, 4, 2) + timer)
    # Notification suppression, config space, stray wakeups.
    write('fuzz-virtio-net', 'misc', hdr(2, 2 | 8 | 16, 3, 3) +
          struct.pack('<BBHH', SUPPRESS, 0, 1, 0) + struct.pack('<BBHH', SUPPRESS, 1, 0, 5) +
          bytes([CONFIG, 0, 0, CONFIG, 6, 1, CONFIG, 8, 2, CONFIG, 0, 8, CONFIG, 3, 4,
                 SPURIOUS, KICK, 2, KICK, 0]) +
          fill(4, 1526) + frame(200) + turn + tx(12 + 60) + turn)


def netdev_opts_seeds():
    """fuzz-netdev-opts: mode byte 0 a -netdev user string, 1 an argv."""
    def user(name, arg):
        write('fuzz-netdev-opts', 'user-' + name, b'\0' + arg.encode())

    def argv(name, *a):
        write('fuzz-netdev-opts', 'argv-' + name, b'\1' + b'\0'.join(x.encode() for x in a))

    user('minimal', 'id=n0')
    user('full', 'id=n1,net=192.168.76.0/24,host=192.168.76.2,dns=192.168.76.3,'
         'dhcpstart=192.168.76.9,hostname=guest,domainname=example.com,dnssearch=a.example,'
         'dnssearch=b.example.,restrict=on,hostfwd=tcp::2222-:22,'
         'hostfwd=udp:127.0.0.1:5353-192.168.76.9:53,ipv6-net=fd00:1::/48,'
         'ipv6-host=fd00:1::2,ipv6-dns=fd00:1::3')
    user('ipv6-only', 'id=n2,ipv4=off,ipv6-net=fd00::,ipv6-dns=2001:db8::53')
    user('ipv4-only', 'id=n3,ipv6=off,net=10.0.0.0/255.0.0.0,tftp=/,bootfile=pxelinux.0,'
         'tftp-server-name=tftp.example,host=10.2')
    user('class-net', 'id=n4,net=172.16.0.0,dns=8.8.8.8,hostfwd=:0.0.0.0:0x16-172.16.0.20:026')
    user('bad-mask', 'id=n5,net=10.0.2.0/33')
    user('host-outside', 'id=n6,host=10.0.3.2')
    user('bad-fwd', 'id=n7,hostfwd=sctp::1-:2')
    user('bad-search', 'id=n8,dnssearch=a..b')
    user('no-ip', 'id=n9,ipv4=off,ipv6=off')
    user('help', 'help')
    argv('netdev-device', '-netdev', 'user,id=n0', '-device',
         'virtio-net-pci,netdev=n0,mac=52:54:00:12:34:57,host_mtu=1500,packed=on,'
         'rx_queue_size=1024,tx_queue_size=512')
    argv('nic', '-nic', 'user,model=virtio-net-pci,mac=02:00:00:00:00:01,hostfwd=tcp::2222-:22',
         '-nic', 'user,net=10.1.0.0/16')
    argv('net-pair', '-net', 'nic,model=virtio,macaddr=52:54:00:00:00:02', '-net',
         'user,restrict=on')
    argv('net-user-alone', '-net', 'user')
    argv('net-nic-alone', '-net', 'nic')
    argv('nic-e1000', '-nic', 'user,model=e1000')
    argv('missing-netdev', '-device', 'virtio-net,netdev=missing')
    argv('duplicate-id', '-netdev', 'user,id=a', '-netdev', 'type=user,id=a')
    argv('wrong-type', '-object', 'rng-builtin,id=r0', '-device', 'virtio-net-pci,netdev=r0')
    argv('multicast-mac', '-netdev', 'user,id=n', '-device', 'virtio-net-pci,netdev=n,'
         'mac=01:00:5e:00:00:01')
    argv('two-net-nic', '-net', 'nic', '-net', 'nic', '-net', 'user')
    argv('netdev-stream', '-netdev', 'stream,id=s0,addr.type=unix,addr.path=/nonexistent/s,'
         'server=off,reconnect=5', '-device', 'virtio-net-pci,netdev=s0')


def dtb_seeds():
    # dtc writes the blobs: a tree with /chosen and one without.
    trees = {
        'chosen': '/dts-v1/; / { model = "m"; #address-cells = <2>; #size-cells = <2>; '
                  'chosen { bootargs = "old"; }; memory@40000000 { '
                  'device_type = "memory"; reg = <0 0x40000000 0 0x1000000>; }; };',
        'bare': '/dts-v1/; /memreserve/ 0x48000000 0x1000; / { };',
    }
    for name, dts in trees.items():
        blob = subprocess.run(['dtc', '-I', 'dts', '-O', 'dtb'], input=dts.encode(),
                              stdout=subprocess.PIPE, check=True).stdout
        write('fuzz-arm-dtb', name, blob)


def main():
    vq_seeds()
    blk_seeds()
    vu_seeds()
    pci_seeds()
    bz_seeds()
    cli_seeds()
    net_seeds()
    netdev_opts_seeds()
    dtb_seeds()
    return 0


if __name__ == '__main__':
    sys.exit(main())
