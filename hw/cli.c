// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/char/chardev-socket.h"
#include "hw/cli.h"
#include "hw/device.h"
#include "hw/nic-cmdline.h"
#include "hw/object.h"
#include "util/log.h"
#include "util/opts.h"

/*
 * -m [size=]SIZE: a bare number is MiB, as QEMU's.  QEMU's slots= and
 * maxmem= (memory hotplug) have no meaning on brisk's boards.
 */
static const struct opt_prop mem_props[] = {
	{ "size", OPT_SIZE, OPT_AT(struct cli_opts, board.ram_size, uint64_t),
	  .min = CLI_MIN_RAM, .max = CLI_MAX_RAM, .scale = 1 << 20, .def = "512M",
	  .help = "guest RAM, a whole number of MiB" },
	{ NULL },
};
static const struct opt_spec mem_spec = { "-m", "size", mem_props };

/* An option list, or its "help". */
static int parse_list(const struct opt_spec *spec, const char *arg, struct cli_opts *o)
{
	int r = opts_parse(spec, arg, o);

	if (r == OPTS_HELP) {
		o->action = CLI_OPT_HELP;
		o->help = spec;
		return 0;
	}
	return r;
}

static int parse_mem(const char *arg, struct cli_opts *o)
{
	if (parse_list(&mem_spec, arg, o))
		return -1;
	if (o->board.ram_size & 0xfffff) {
		error_report("-m: memory size '%s' is not a whole number of MiB", arg);
		return -1;
	}
	return 0;
}

static const struct opt_prop smp_props[] = {
	{ "cpus", OPT_UINT, OPT_AT(struct cli_opts, board.ncpus, unsigned), .min = 1,
	  .max = CLI_MAX_CPUS, .def = "1", .help = "vCPUs" },
	{ NULL },
};
static const struct opt_spec smp_spec = { "-smp", "cpus", smp_props };

static const struct opt_prop timeout_props[] = {
	{ "seconds", OPT_UINT, OPT_AT(struct cli_opts, timeout_s, unsigned), .min = 1,
	  .help = "stop the guest after this long, exit 124" },
	{ NULL },
};
static const struct opt_spec timeout_spec = { "-timeout", "seconds", timeout_props };

/* Room for one more -drive, -chardev or -export; else -1 after one line. */
static int blk_room(const struct cli_opts *o)
{
	if (o->nr_drives + o->nr_chardevs + o->nr_exports < CLI_MAX_BLK_ARGS)
		return 0;
	error_report("too many -drive/-export/-chardev options (at most %d)",
		     CLI_MAX_BLK_ARGS);
	return -1;
}

/* -drive and -chardev: a disk's back end, or its "help". */
static int add_backend(struct cli_opts *o, struct cli_arg *list, unsigned *nr,
		       const char *arg, const struct opt_spec *spec)
{
	if (opts_wants_help(arg)) {
		o->action = CLI_OPT_HELP;
		o->help = spec;
		return 0;
	}
	if (blk_room(o))
		return -1;
	list[(*nr)++] = (struct cli_arg){ arg, o->at };
	return 0;
}

/*
 * The head of arg, NAME or FORM=NAME, for a table of names: 0 when arg is
 * "help" (o->action is then list), else 1 with *name, *len and *rest set.
 */
static int table_head(const char *arg, const char *form, enum cli_action list,
		      struct cli_opts *o, const char **name, size_t *len, const char **rest)
{
	if (!strcmp(arg, "help")) {
		o->action = list;
		return 0;
	}
	*name = opts_head(arg, form, len, rest);
	return 1;
}

/* A name no table has: one line, -1. */
static int unknown(const char *opt, const char *noun, const char *name, size_t len)
{
	error_report("%s: unknown %s '%.*s' (brisk %s help lists them)", opt, noun,
		     (int)len, name, opt);
	return -1;
}

/* NICs of QEMU's that brisk has not, for which virtio-net-pci stands in. */
static bool nic_model_known(const char *name, size_t len)
{
	static const char *const models[] = {
		"e1000", "e1000e", "e1000-82544gc", "e1000-82545em", "igb", "rtl8139",
		"ne2k_pci", "pcnet", "vmxnet3", "i82559er", "tulip", NULL,
	};

	for (unsigned i = 0; models[i]; i++)
		if (strlen(models[i]) == len && !strncmp(models[i], name, len))
			return true;
	return false;
}

static int nic_model_refused(const char *opt, const char *name, size_t len)
{
	error_report("%s %.*s: brisk's network device is virtio-net-pci "
		     "(-device virtio-net-pci,netdev=ID)", opt, (int)len, name);
	return -1;
}

/*
 * -device NAME,...: the device table decides.  A board device is parsed
 * into board_cfg now; the others are parsed where they are made, in
 * command-line order.
 */
static int parse_device(const char *arg, struct cli_opts *o)
{
	const struct device_family *f;
	const char *name, *rest;
	size_t len;

	if (!table_head(arg, "driver", CLI_DEVICE_LIST, o, &name, &len, &rest))
		return 0;
	if (!(f = device_find(name, len)))
		return nic_model_known(name, len) ? nic_model_refused("-device", name, len) :
		       unknown("-device", "device", name, len);
	if (opts_wants_help(rest)) {
		o->action = CLI_OPT_HELP;
		o->help = f->spec;
		return 0;
	}
	if (f->kind == DEVICE_BOARD) {
		void *cfg = (char *)&o->board + f->board_offset;

		if (f->cfg_size)
			memcpy(cfg, f->defaults, f->cfg_size);
		return opts_parse(f->spec, rest, cfg) || (f->check && f->check(cfg)) ? -1 : 0;
	}
	if (o->nr_devices == CLI_MAX_DEVICES) {
		error_report("too many -device options (at most %d)", CLI_MAX_DEVICES);
		return -1;
	}
	o->devices[o->nr_devices++] = (struct cli_device){ f, rest, o->at };
	return 0;
}

/* -export TYPE,...: the export table decides; hw/main.c makes it as a device. */
static int parse_export(const char *arg, struct cli_opts *o)
{
	const struct device_family *f;
	const char *name, *rest;
	size_t len;

	if (!table_head(arg, "type", CLI_EXPORT_LIST, o, &name, &len, &rest))
		return 0;
	if (!(f = export_find(name, len)))
		return unknown("-export", "type", name, len);
	if (opts_wants_help(arg)) {
		o->action = CLI_OPT_HELP;
		o->help = f->spec;
		return 0;
	}
	if (blk_room(o))
		return -1;
	o->exports[o->nr_exports++] = (struct cli_device){ f, rest, o->at };
	return 0;
}

/*
 * -object TYPE,id=ID,... and -netdev TYPE,id=ID,...: the object table
 * decides; hw/main.c makes them, in command-line order, before any device.
 */
static int parse_object(const char *option, const char *arg, struct cli_opts *o)
{
	bool netdev = !strcmp(option, "-netdev");
	const struct object_type *t;
	const char *name, *rest;
	size_t len;

	if (!table_head(arg, netdev ? "type" : "qom-type",
			netdev ? CLI_NETDEV_LIST : CLI_OBJECT_LIST, o, &name, &len, &rest))
		return 0;
	if (!(t = netdev ? netdev_type_find(name, len) : object_type_find(name, len)))
		return unknown(option, "type", name, len);
	if (opts_wants_help(rest)) {
		o->action = CLI_OPT_HELP;
		o->help = t->spec;
		return 0;
	}
	if (o->nr_objects == CLI_MAX_OBJECTS) {
		error_report("too many -object and -netdev options (at most %d)",
			     CLI_MAX_OBJECTS);
		return -1;
	}
	o->objects[o->nr_objects++] = (struct cli_object){ t, rest };
	return 0;
}

/*
 * QEMU's older ways to make a NIC and its back end in one go: -nic, and
 * -net nic paired with -net user.  hw/main.c turns them into a -netdev
 * and a -device virtio-net-pci (brisk's only NIC).
 */
static int add_nic(struct cli_opts *o, enum cli_nic_kind kind, const char *arg)
{
	if (o->nr_nics == CLI_MAX_NICS) {
		error_report("too many -nic and -net options (at most %d)", CLI_MAX_NICS);
		return -1;
	}
	o->nics[o->nr_nics++] = (struct cli_nic){ kind, arg };
	return 0;
}

/* TYPE,...,help: the -netdev type's properties (0, o->action set); else 1. */
static int netdev_help(const char *arg, struct cli_opts *o)
{
	const char *rest;
	size_t len;
	const char *name = opts_head(arg, "type", &len, &rest);
	const struct object_type *t = netdev_type_find(name, len);

	if (!t || !opts_wants_help(rest))
		return 1;
	o->action = CLI_OPT_HELP;
	o->help = t->spec;
	return 0;
}

/* -nic none|TYPE[,model=M][,mac=MAC][,back-end properties]. */
static int parse_nic(const char *arg, struct cli_opts *o)
{
	if (!strcmp(arg, "none"))
		return 0;
	if (!strcmp(arg, "help")) {
		o->action = CLI_NETDEV_LIST;
		return 0;
	}
	if (!netdev_help(arg, o))
		return 0;
	return nic_cmdline_check("-nic", arg) ? -1 : add_nic(o, CLI_NIC, arg);
}

/* -net none | nic[,model=M][,macaddr=MAC] | user[,...]. */
static int parse_net(const char *arg, struct cli_opts *o)
{
	const char *name, *rest;
	size_t len;

	if (!strcmp(arg, "none"))
		return 0;
	if (!table_head(arg, "type", CLI_NETDEV_LIST, o, &name, &len, &rest))
		return 0;
	if (len == 3 && !strncmp(name, "nic", 3))
		return nic_cmdline_check("-net nic", rest) ? -1 : add_nic(o, CLI_NET_NIC, rest);
	if (netdev_type_find(name, len))
		return netdev_help(arg, o) ? add_nic(o, CLI_NET_BACKEND, arg) : 0;
	error_report("-net %.*s: brisk takes -net none, -net nic or -net TYPE with a "
		     "-netdev type (brisk -netdev help lists them)", (int)len, name);
	return -1;
}

static int parse_serial(const char *arg, struct cli_opts *o)
{
	/* QEMU would add a second port; brisk's boards have one. */
	if (o->serial_given) {
		error_report("-serial %s: -serial given twice (brisk's board has one "
			     "serial port)", arg);
		return -1;
	}
	/* brisk has no monitor: mon:stdio is the console alone, Ctrl-A x still quits. */
	if (!strcmp(arg, "mon:stdio"))
		arg = "stdio";
	if (strcmp(arg, "stdio") && strcmp(arg, "none") &&
	    (strncmp(arg, "file:", 5) || !arg[5])) {
		error_report("-serial: unsupported backend '%s' "
			     "(stdio, mon:stdio, file:PATH or none)", arg);
		return -1;
	}
	o->board.serial = arg;
	o->serial_given = true;
	return 0;
}

/*
 * QEMU options whose values brisk honours by being what it is: no
 * display, VGA, monitor or network, and vCPUs that are the host's CPU as
 * KVM offers it.  Any other value asks for something brisk lacks.
 */
static const struct {
	const char *opt, *values[3], *why;
} fixed_opts[] = {
	/* migratable=off: every feature KVM offers, none held back for a move. */
	{ "cpu", { "host", "max", "host,migratable=off" },
	  "brisk's vCPUs are the host's CPU as KVM offers it" },
	{ "display", { "none" }, "brisk has no display" },
	{ "vga", { "none" }, "brisk has no display" },
	{ "monitor", { "none" }, "brisk has no monitor" },
	{ "parallel", { "none" }, "brisk has no parallel port" },
};

static int parse_fixed(const char *opt, const char *arg, struct cli_opts *o)
{
	for (unsigned i = 0; i < ARRAY_SIZE(fixed_opts); i++) {
		const char *const *v = fixed_opts[i].values;

		if (strcmp(opt, fixed_opts[i].opt))
			continue;
		if (!strcmp(arg, "help")) {
			o->action = CLI_VALUES_HELP;
			o->fixed = i;
			return 0;
		}
		char only[128] = "";
		unsigned n = 0;

		while (n < ARRAY_SIZE(fixed_opts[i].values) && v[n])
			if (!strcmp(arg, v[n++]))
				return 0;
		/* Every accepted value, "a", "a or b", "a, b or c". */
		for (unsigned j = 0; j < n; j++)
			snprintf(only + strlen(only), sizeof(only) - strlen(only),
				 "%s%s", j == 0 ? "" : j + 1 < n ? ", " : " or ", v[j]);
		error_report("-%s %s: %s (only -%s %s)", opt, arg,
			     fixed_opts[i].why, opt, only);
		return -1;
	}
	assert(!"an option without its fixed_opts entry");
	return -1;
}

void cli_print_values(const struct cli_opts *o)
{
	assert(o->fixed < ARRAY_SIZE(fixed_opts));
	printf("-%s takes (%s):\n", fixed_opts[o->fixed].opt, fixed_opts[o->fixed].why);
	for (unsigned j = 0; j < ARRAY_SIZE(fixed_opts[o->fixed].values) &&
			     fixed_opts[o->fixed].values[j]; j++)
		printf("  %s\n", fixed_opts[o->fixed].values[j]);
}

/*
 * -action: what brisk does anyway (a reboot or shutdown ends it), or what
 * pvpanic can do.  pause and reset would need a monitor or a rebooting board.
 */
static const struct opt_prop action_props[] = {
	{ "panic", OPT_ENUM, OPT_AT(struct cli_opts, panic, int),
	  .names = (const char *const[]){ "exit-failure", "shutdown", "none", NULL },
	  .vals = (const int[]){ PANIC_EXIT_FAILURE, PANIC_SHUTDOWN, PANIC_NONE },
	  .def = "exit-failure", .help = "pvpanic: exit 2, exit 0, or nothing" },
	{ "reboot", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE, .names = (const char *const[]){ "shutdown", NULL },
	  .why = "a guest reboot always ends brisk", .help = "always so" },
	{ "shutdown", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE,
	  .names = (const char *const[]){ "poweroff", NULL },
	  .why = "a guest shutdown always ends brisk", .help = "always so" },
	{ NULL },
};
static const struct opt_spec action_spec = { "-action", NULL, action_props };

/* -rtc base=utc|localtime[,clock=host]: the RTC follows the host's clock. */
static const struct opt_prop rtc_props[] = {
	{ "base", OPT_ENUM, OPT_AT(struct cli_opts, board.rtc_base, int),
	  .names = (const char *const[]){ "utc", "localtime", NULL },
	  .def = "utc", .help = "the time zone the RTC keeps" },
	{ "clock", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE, .names = (const char *const[]){ "host", NULL },
	  .why = "the RTC follows the host's clock", .help = "always so" },
	{ NULL },
};
static const struct opt_spec rtc_spec = { "-rtc", NULL, rtc_props };

/*
 * -accel kvm[,check=on|off]: KVM is brisk's only accelerator.  check=off
 * boots even where kvm_check() finds /dev/kvm unable to run the guest at
 * speed (a PVM-enabled kernel on kvm_pvm does run).
 */
static const struct opt_prop accel_props[] = {
	{ "accel", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE | OPT_REQUIRED,
	  .names = (const char *const[]){ "kvm", NULL }, .why = "brisk has only kvm",
	  .help = "the accelerator" },
	{ "check", OPT_BOOL, OPT_AT(struct cli_opts, kvm_check, bool), .def = "on",
	  .help = "refuse a /dev/kvm that cannot run guests (see --check-kvm)" },
	{ NULL },
};
static const struct opt_spec accel_spec = { "-accel", "accel", accel_props };

/*
 * -machine [TYPE][,accel=kvm][,dumpdtb=FILE]: brisk has one board per
 * architecture, so TYPE is only checked against QEMU's names for it.
 */
static const struct opt_prop machine_props[] = {
	{ "type", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE,
	  .names = (const char *const[]){ "pc", "q35", "virt", "microvm", NULL },
	  .why = "not a name of brisk's one board", .help = "the board" },
	/* accel=kvm, or a list of fallbacks that tries KVM first. */
	{ "accel", OPT_STRBUF, OPT_AT(struct cli_opts, machine_accel, char[64]),
	  .max = 63, .def = "kvm", .help = "kvm, or kvm:FALLBACK..." },
	{ "dumpdtb", OPT_STRBUF, OPT_AT(struct cli_opts, dumpdtb_path, char[4096]),
	  .max = 4095, .help = "write the guest's device tree to FILE and exit (arm64)" },
	{ NULL },
};
static const struct opt_spec machine_spec = { "-machine", "type", machine_props };

static int parse_machine(const char *arg, struct cli_opts *o)
{
	if (parse_list(&machine_spec, arg, o))
		return -1;
	/* kvm, or kvm:FALLBACK[:...]: KVM is tried first and always there. */
	if (o->machine_accel[0] && strcmp(o->machine_accel, "kvm") &&
	    (strncmp(o->machine_accel, "kvm:", 4) || !o->machine_accel[4])) {
		error_report("-machine: accel=%s: brisk has only kvm (accel=kvm)",
			     o->machine_accel);
		return -1;
	}
	if (o->dumpdtb_path[0])
		o->dumpdtb = o->dumpdtb_path;
	return 0;
}

/* With -export, brisk runs no guest: what only a guest uses is refused. */
static int cli_check_daemon(const struct cli_opts *o)
{
	const struct board_cfg *b = &o->board;
	const char *what = b->kernel ? "-kernel" : b->initrd ? "-initrd" :
			   b->append ? "-append" : b->dtb ? "-dtb" :
			   o->dumpdtb ? "-machine dumpdtb" :
			   b->debug_exit.present ? "-device isa-debug-exit" : NULL;
	const char *dev = "";

	/* The first of them on the command line names what needs a guest. */
	if (!what && o->nr_chardevs &&
	    (!o->nr_devices || o->chardevs[0].at < o->devices[0].at))
		what = "-chardev";
	if (!what && o->nr_devices) {
		what = "-device";
		dev = o->devices[0].family->name;
	}
	if (!what && o->nr_nics)
		what = o->nics[0].kind == CLI_NIC ? "-nic" : "-net";
	for (unsigned i = 0; !what && i < o->nr_objects; i++)
		if (!strcmp(o->objects[i].type->option, "-netdev"))
			what = "-netdev";
	if (what) {
		error_report("%s%s%.*s needs a guest; with -export brisk runs none and "
			     "serves its drives to other processes", what, *dev ? " " : "",
			     (int)strcspn(dev, ","), dev);
		return -1;
	}
	return 0;
}

enum opt_id {
	OPT_KERNEL, OPT_INITRD, OPT_APPEND, OPT_M, OPT_SMP, OPT_SERIAL,
	OPT_DEVICE, OPT_DRIVE, OPT_NAME, OPT_TIMEOUT, OPT_NOGRAPHIC,
	OPT_NOREBOOT, OPT_HELP, OPT_VERSION, OPT_ACCEL, OPT_CHECK_KVM,
	OPT_DTB, OPT_MACHINE, OPT_EXPORT, OPT_CHARDEV, OPT_FIXED, OPT_ACTION,
	OPT_RTC, OPT_SNAPSHOT, OPT_NODEFAULTS, OPT_NOOP, OPT_OBJECT, OPT_NETDEV,
	OPT_NET, OPT_NIC,
};

static const struct {
	const char *name;
	enum opt_id id;
	bool has_arg;
} options[] = {
	{ "kernel", OPT_KERNEL, true }, { "initrd", OPT_INITRD, true },
	{ "append", OPT_APPEND, true }, { "m", OPT_M, true },
	{ "smp", OPT_SMP, true }, { "serial", OPT_SERIAL, true },
	{ "device", OPT_DEVICE, true }, { "drive", OPT_DRIVE, true },
	{ "name", OPT_NAME, true }, { "timeout", OPT_TIMEOUT, true },
	{ "nographic", OPT_NOGRAPHIC, false },
	{ "no-reboot", OPT_NOREBOOT, false },
	{ "h", OPT_HELP, false }, { "help", OPT_HELP, false },
	{ "version", OPT_VERSION, false },
	{ "accel", OPT_ACCEL, true }, { "check-kvm", OPT_CHECK_KVM, false },
	{ "dtb", OPT_DTB, true }, { "machine", OPT_MACHINE, true },
	{ "M", OPT_MACHINE, true }, { "export", OPT_EXPORT, true },
	{ "chardev", OPT_CHARDEV, true }, { "object", OPT_OBJECT, true },
	{ "cpu", OPT_FIXED, true }, { "display", OPT_FIXED, true },
	{ "vga", OPT_FIXED, true }, { "monitor", OPT_FIXED, true },
	{ "parallel", OPT_FIXED, true },
	{ "net", OPT_NET, true }, { "nic", OPT_NIC, true },
	{ "netdev", OPT_NETDEV, true },
	{ "action", OPT_ACTION, true }, { "rtc", OPT_RTC, true },
	{ "snapshot", OPT_SNAPSHOT, false },
	{ "nodefaults", OPT_NODEFAULTS, false },
	/* KVM is brisk's only accelerator; it reads no configuration file. */
	{ "enable-kvm", OPT_NOOP, false }, { "no-user-config", OPT_NOOP, false },
};

static int apply(struct cli_opts *o, enum opt_id id, const char *name,
		 const char *arg)
{
	switch (id) {
	case OPT_FIXED: return parse_fixed(name, arg, o);
	case OPT_ACTION: return parse_list(&action_spec, arg, o);
	case OPT_RTC: return parse_list(&rtc_spec, arg, o);
	case OPT_SNAPSHOT: o->snapshot = true; return 0;
	case OPT_NODEFAULTS: o->nodefaults = true; return 0;
	case OPT_NOOP: return 0;
	case OPT_KERNEL: o->board.kernel = arg; return 0;
	case OPT_INITRD: o->board.initrd = arg; return 0;
	case OPT_DTB: o->board.dtb = arg; return 0;
	case OPT_MACHINE: return parse_machine(arg, o);
	case OPT_APPEND: o->board.append = arg; return 0;
	case OPT_NAME: o->name = arg; return 0;
	case OPT_M: return parse_mem(arg, o);
	case OPT_SMP: return parse_list(&smp_spec, arg, o);
	case OPT_SERIAL: return parse_serial(arg, o);
	case OPT_DEVICE: return parse_device(arg, o);
	case OPT_DRIVE:
		return add_backend(o, o->drives, &o->nr_drives, arg, &blk_drive_spec);
	case OPT_EXPORT: return parse_export(arg, o);
	case OPT_OBJECT: return parse_object("-object", arg, o);
	case OPT_NETDEV: return parse_object("-netdev", arg, o);
	case OPT_NET: return parse_net(arg, o);
	case OPT_NIC: return parse_nic(arg, o);
	case OPT_CHARDEV:
		return add_backend(o, o->chardevs, &o->nr_chardevs, arg, &chardev_socket_spec);
	case OPT_TIMEOUT: return parse_list(&timeout_spec, arg, o);
	case OPT_NOGRAPHIC: return 0;	/* brisk has no display anyway */
	case OPT_NOREBOOT: return 0;	/* a guest reboot always ends brisk */
	case OPT_HELP: o->action = CLI_HELP; return 0;
	case OPT_VERSION: o->action = CLI_VERSION; return 0;
	case OPT_ACCEL:
		if (!strcmp(arg, "help")) {
			o->action = CLI_ACCEL_HELP;
			return 0;
		}
		return parse_list(&accel_spec, arg, o);
	case OPT_CHECK_KVM: o->action = CLI_CHECK_KVM; return 0;
	}
	return -1;
}

int cli_parse(int argc, char **argv, struct cli_opts *o)
{
	*o = (struct cli_opts){
		.action = CLI_RUN, .kvm_check = true,
		.board = { .serial = "stdio", .ram_size = CLI_DEFAULT_RAM, .ncpus = 1 },
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned k;

		if (a[0] != '-' || !a[1]) {
			error_report("unexpected argument '%s' (see --help)", a);
			return -1;
		}
		/* As QEMU does, accept "--opt" as well as "-opt". */
		const char *name = a[1] == '-' ? a + 2 : a + 1;

		for (k = 0; k < ARRAY_SIZE(options); k++)
			if (!strcmp(name, options[k].name))
				break;
		if (k == ARRAY_SIZE(options)) {
			error_report("unknown option '%s' (see --help)", a);
			return -1;
		}
		const char *arg = NULL;

		if (options[k].has_arg) {
			if (i + 1 == argc) {
				error_report("option '%s' needs an argument", a);
				return -1;
			}
			arg = argv[++i];
		}
		o->at = (unsigned)i;
		if (apply(o, options[k].id, options[k].name, arg))
			return -1;
		if (o->action != CLI_RUN)
			return 0;
	}
	/* As QEMU: -nodefaults leaves no serial port that -serial did not ask for. */
	if (o->nodefaults && !o->serial_given)
		o->board.serial = "none";
	if (o->nr_exports)
		return cli_check_daemon(o);
	if (!o->board.kernel && !o->dumpdtb) {
		error_report("no kernel given: use -kernel bzImage (see --help)");
		return -1;
	}
	return 0;
}

void cli_print_help(void)
{
	fputs("Usage: brisk -kernel bzImage [options]\n"
	      "       brisk -drive ...,id=ID -export vhost-user-blk,... (no guest)\n"
	      "\n"
	      "Guest:\n"
	      "  -kernel FILE        Linux bzImage (x86) or Image (arm64) to boot\n"
	      "  -initrd FILE        initial ramdisk\n"
	      "  -append STRING      kernel command line\n"
	      "  -m [size=]SIZE      RAM: 512 (MiB), 512M, 2G... (default 512M)\n"
	      "  -smp [cpus=]N       vCPUs, 1 to 254 (default 1)\n"
	      "  -dtb FILE           boot with this device tree (arm64)\n"
	      "  -machine|-M [TYPE][,accel=kvm][,dumpdtb=FILE]  TYPE pc, q35,\n"
	      "                      virt or microvm names brisk's one board;\n"
	      "                      dumpdtb writes its device tree and exits (arm64)\n"
	      "  -serial BACKEND     the console: stdio (default), mon:stdio (the\n"
	      "                      same: brisk has no monitor), file:PATH, none\n"
	      "  -rtc base=utc|localtime[,clock=host]  RTC time (default utc)\n"
	      "  -action panic=exit-failure|shutdown|none  pvpanic: exit 2\n"
	      "                      (default), exit 0, or nothing;\n"
	      "                      reboot=shutdown, shutdown=poweroff (always so)\n"
	      "  -object rng-random,id=ID[,filename=/dev/urandom] | rng-builtin,id=ID\n"
	      "        | iothread,id=ID  back ends devices name by id (-object help)\n"
	      "  -timeout SECONDS    stop the guest after SECONDS, exit 124\n"
	      "  -name NAME          a name for this guest\n"
	      "\n"
	      "Disks:\n"
	      "  -drive file=F[,if=virtio|none][,id=ID][,format=raw]\n"
	      "         [,aio=io_uring|threads][,cache=writeback|none]\n"
	      "         [,readonly=on|off][,snapshot=on|off][,media=disk]\n"
	      "                      a raw image (defaults: if=virtio, aio=io_uring,\n"
	      "                      cache=writeback, readonly=off, snapshot=off)\n"
	      "  -snapshot           every drive writes to a private copy of its\n"
	      "                      image, in $TMPDIR (default /var/tmp, else\n"
	      "                      /tmp), dropped at exit: the image is only read\n"
	      "  -chardev socket,id=ID,path=SOCKET[,reconnect=SECONDS] | socket,id=ID,fd=N\n"
	      "                      the back-end's socket for vhost-user-blk-pci\n"
	      "                      (qemu-storage-daemon, brisk -export...)\n"
	      "\n"
	      "Network:\n"
	      "  -netdev user,id=ID[,net=10.0.2.0/24][,host=10.0.2.2][,dns=10.0.2.3]\n"
	      "         [,dhcpstart=10.0.2.15][,restrict=off][,hostname=H]\n"
	      "         [,hostfwd=tcp|udp:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT]...\n"
	      "                      QEMU's user networking (-netdev help)\n"
	      "  -nic user[,model=virtio-net-pci][,mac=MAC][,-netdev user's properties]\n"
	      "  -net nic[,model=virtio][,macaddr=MAC] -net user[,...]\n"
	      "                      both at once; brisk's NIC is always virtio-net-pci\n"
	      "\n", stdout);
	fputs("Devices (-device help lists them; -device NAME,help, -export TYPE,help,\n"
	      "-drive help... an option's properties, what each does, its limits):\n", stdout);
	device_print_synopses(stdout);
	fputs("A value shown is the default; <type> stands where the default depends\n"
	      "on something else (NAME,help says what) or there is none.\n"
	      "\n"
	      "KVM:\n"
	      "  -accel kvm[,check=on|off]  check=off boots even where /dev/kvm\n"
	      "                      fails brisk's test guest (see --check-kvm)\n"
	      "  -enable-kvm         accepted: KVM is brisk's only accelerator\n"
	      "  -cpu host|max|host,migratable=off  accepted: vCPUs are the\n"
	      "                      host's CPU as KVM offers it\n"
	      "  --check-kvm         say what backs /dev/kvm and whether it runs\n"
	      "                      ordinary guests at hardware speed (exit 0/1)\n"
	      "\n"
	      "Accepted for QEMU's command lines, as brisk has none of what they\n"
	      "turn off: -nographic, -no-reboot (a guest reboot always ends brisk),\n"
	      "-display none, -vga none, -monitor none, -parallel none, -net none,\n"
	      "-nic none (brisk makes no NIC unless asked), -no-user-config,\n"
	      "-nodefaults (no console unless -serial gives one).\n"
	      "\n"
	      "Given twice, -kernel, -initrd, -append, -dtb, -m, -smp, -name and\n"
	      "-timeout take the last value, as QEMU does; a second -serial is\n"
	      "refused (the board has one serial port).  -cpu help, -display\n"
	      "help... list the values such an option takes.\n"
	      "\n"
	      "  -h, --help          this text\n"
	      "  --version           print the version\n"
	      "\n"
	      "Exit status: 0 guest powered off or rebooted, 1 error, 2 guest\n"
	      "panic, 124 timeout, 128+N signal N, (V << 1) | 1 for isa-debug-exit\n"
	      "value V.  Ctrl-A x on the console quits.\n", stdout);
}
