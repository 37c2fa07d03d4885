// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cli.h"
#include "util/log.h"

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t shift = 20;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);

	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'B': shift = 0; break;
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	default: return -1;
	}
	if (*end && end[1])
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A decimal or 0x-prefixed number no larger than max. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);

	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_mem(const char *arg, struct cli_opts *o)
{
	const char *s = strncmp(arg, "size=", 5) ? arg : arg + 5;

	if (cli_parse_size(s, &o->ram_size)) {
		error_report("-m: invalid memory size '%s'", arg);
		return -1;
	}
	if (o->ram_size < CLI_MIN_RAM || o->ram_size > CLI_MAX_RAM) {
		error_report("-m: memory size '%s' out of range (64M to 1T)", arg);
		return -1;
	}
	if (o->ram_size & 0xfffff) {
		error_report("-m: memory size '%s' is not a whole number of MiB", arg);
		return -1;
	}
	return 0;
}

static int parse_smp(const char *arg, struct cli_opts *o)
{
	const char *s = strncmp(arg, "cpus=", 5) ? arg : arg + 5;
	unsigned long n;

	if (parse_uint(s, ULONG_MAX, &n) || n == 0 || n > CLI_MAX_CPUS) {
		error_report("-smp: invalid CPU count '%s' (1 to %d)", arg,
			     CLI_MAX_CPUS);
		return -1;
	}
	o->ncpus = n;
	return 0;
}

static int parse_debug_exit(const char *props, struct cli_opts *o)
{
	unsigned long base = 0x501, size = 2;

	while (props && *props) {
		const char *next = strchr(props, ',');
		size_t len = next ? (size_t)(next - props) : strlen(props);
		char kv[64];

		if (len >= sizeof(kv))
			goto bad;
		memcpy(kv, props, len);
		kv[len] = '\0';
		if (!strncmp(kv, "iobase=", 7)) {
			if (parse_uint(kv + 7, 0xffff, &base))
				goto bad;
		} else if (!strncmp(kv, "iosize=", 7)) {
			if (parse_uint(kv + 7, 4, &size) || size == 0 || size == 3)
				goto bad;
		} else {
			goto bad;
		}
		props = next ? next + 1 : NULL;
	}
	if (base + size > 0x10000) {
		error_report("-device isa-debug-exit: ports 0x%lx+%lu beyond 0xffff",
			     base, size);
		return -1;
	}
	o->debug_exit = true;
	o->debug_exit_iobase = base;
	o->debug_exit_iosize = size;
	return 0;
bad:
	error_report("-device isa-debug-exit: bad property in '%s' "
		     "(iobase=N, iosize=1|2|4)", props);
	return -1;
}

static int add_blk(struct cli_opts *o, enum cli_blk_kind kind, const char *arg)
{
	if (o->nr_blk == CLI_MAX_BLK_ARGS) {
		error_report("too many -drive/-device options (at most %d)",
			     CLI_MAX_BLK_ARGS);
		return -1;
	}
	o->blk[o->nr_blk++] = (struct cli_blk_arg){ kind, arg };
	o->nr_exports += kind == CLI_BLK_EXPORT;
	return 0;
}

static int parse_device(const char *arg, struct cli_opts *o)
{
	size_t len = strcspn(arg, ",");
	const char *props = arg[len] ? arg + len + 1 : NULL;

	if (len == strlen("isa-debug-exit") && !strncmp(arg, "isa-debug-exit", len))
		return parse_debug_exit(props, o);
	/* Every brisk board has its pvpanic; QEMU's CI lines ask for it. */
	if (!strcmp(arg, "pvpanic"))
		return 0;
	if ((len == strlen("virtio-blk-pci") && !strncmp(arg, "virtio-blk-pci", len)) ||
	    (len == strlen("vhost-user-blk-pci") && !strncmp(arg, "vhost-user-blk-pci", len)))
		return add_blk(o, CLI_BLK_DEVICE, arg);
	error_report("-device: unknown device '%.*s' (supported: "
		     "virtio-blk-pci, vhost-user-blk-pci, isa-debug-exit, pvpanic)",
		     (int)len, arg);
	return -1;
}

static int parse_serial(const char *arg, struct cli_opts *o)
{
	/* brisk has no monitor: mon:stdio is the console alone, Ctrl-A x still quits. */
	if (!strcmp(arg, "mon:stdio"))
		arg = "stdio";
	if (strcmp(arg, "stdio") && strcmp(arg, "none") &&
	    (strncmp(arg, "file:", 5) || !arg[5])) {
		error_report("-serial: unsupported backend '%s' "
			     "(stdio, mon:stdio, file:PATH or none)", arg);
		return -1;
	}
	o->serial = arg;
	o->serial_given = true;
	return 0;
}

/* Whether the n bytes at p, one item of a comma list, are exactly s. */
static bool item_is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && !strncmp(p, s, n);
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
	{ "net", { "none" }, "brisk has no network device" },
	{ "nic", { "none" }, "brisk has no network device" },
};

static int parse_fixed(const char *opt, const char *arg)
{
	for (unsigned i = 0; i < ARRAY_SIZE(fixed_opts); i++) {
		const char *const *v = fixed_opts[i].values;

		if (strcmp(opt, fixed_opts[i].opt))
			continue;
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

/*
 * -action panic=exit-failure|shutdown|none, reboot=shutdown,
 * shutdown=poweroff: what brisk does anyway, or what pvpanic can do.
 * pause and reset would need a monitor or a rebooting board.
 */
static int parse_action(const char *arg, struct cli_opts *o)
{
	static const struct {
		const char *item;
		int panic;		/* -1: accepted, changes nothing */
	} actions[] = {
		{ "panic=exit-failure", PANIC_EXIT_FAILURE },
		{ "panic=shutdown", PANIC_SHUTDOWN },
		{ "panic=none", PANIC_NONE },
		{ "reboot=shutdown", -1 },
		{ "shutdown=poweroff", -1 },
	};

	while (*arg) {
		size_t n = strcspn(arg, ",");
		unsigned i;

		for (i = 0; i < ARRAY_SIZE(actions); i++)
			if (item_is(arg, n, actions[i].item))
				break;
		if (i == ARRAY_SIZE(actions)) {
			error_report("-action: unsupported '%.*s' (panic=exit-failure|"
				     "shutdown|none, reboot=shutdown, shutdown=poweroff)",
				     (int)n, arg);
			return -1;
		}
		if (actions[i].panic >= 0)
			o->panic = (enum machine_panic)actions[i].panic;
		arg += n + (arg[n] == ',');
	}
	return 0;
}

/* -rtc base=utc|localtime[,clock=host]: the RTC follows the host's clock. */
static int parse_rtc(const char *arg, struct cli_opts *o)
{
	while (*arg) {
		size_t n = strcspn(arg, ",");

		if (item_is(arg, n, "base=utc"))
			o->rtc_localtime = false;
		else if (item_is(arg, n, "base=localtime"))
			o->rtc_localtime = true;
		else if (!item_is(arg, n, "clock=host")) {
			error_report("-rtc: unsupported '%.*s' (base=utc|localtime, "
				     "clock=host)", (int)n, arg);
			return -1;
		}
		arg += n + (arg[n] == ',');
	}
	return 0;
}

/*
 * -accel kvm[,check=on|off]: KVM is brisk's only accelerator.  check=off
 * boots even where kvm_check() finds /dev/kvm unable to run the guest at
 * speed (a PVM-enabled kernel on kvm_pvm does run).
 */
static int parse_accel(const char *arg, struct cli_opts *o)
{
	size_t len = strcspn(arg, ",");
	const char *props = arg[len] ? arg + len + 1 : "";

	if (!strcmp(arg, "help")) {
		o->action = CLI_ACCEL_HELP;
		return 0;
	}
	if (len != 3 || strncmp(arg, "kvm", 3)) {
		error_report("-accel: unsupported accelerator '%.*s' (brisk has "
			     "only kvm)", (int)len, arg);
		return -1;
	}
	while (*props) {
		size_t n = strcspn(props, ",");

		if (n == 8 && !strncmp(props, "check=on", n))
			o->kvm_check = true;
		else if (n == 9 && !strncmp(props, "check=off", n))
			o->kvm_check = false;
		else {
			error_report("-accel kvm: unsupported property '%.*s' "
				     "(check=on|off)", (int)n, props);
			return -1;
		}
		props += n + (props[n] == ',');
	}
	return 0;
}

/*
 * -machine [TYPE][,dumpdtb=FILE]: brisk has one board per architecture,
 * so TYPE is only checked against QEMU's names for it.
 */
static int parse_machine(const char *arg, struct cli_opts *o)
{
	static const char *const types[] = { "pc", "q35", "virt", "microvm" };

	while (*arg) {
		size_t n = strcspn(arg, ",");
		bool known = false;

		/* accel=kvm, or a list of fallbacks that tries KVM first. */
		if (item_is(arg, n, "accel=kvm") ||
		    (n > 10 && !strncmp(arg, "accel=kvm:", 10)))
			known = true;
		if (n > 8 && !strncmp(arg, "dumpdtb=", 8)) {
			if (n - 8 >= sizeof(o->dumpdtb_path)) {
				error_report("-machine: dumpdtb path too long");
				return -1;
			}
			memcpy(o->dumpdtb_path, arg + 8, n - 8);
			o->dumpdtb_path[n - 8] = '\0';
			o->dumpdtb = o->dumpdtb_path;
			known = true;
		}
		for (unsigned i = 0; i < ARRAY_SIZE(types); i++)
			if (strlen(types[i]) == n && !strncmp(arg, types[i], n))
				known = true;
		if (!known) {
			error_report("-machine: unsupported '%.*s' (the machine "
				     "type, accel=kvm, dumpdtb=FILE)", (int)n, arg);
			return -1;
		}
		arg += n + (arg[n] == ',');
	}
	return 0;
}

static int parse_timeout(const char *arg, struct cli_opts *o)
{
	unsigned long t;

	if (parse_uint(arg, UINT_MAX, &t) || t == 0) {
		error_report("-timeout: invalid number of seconds '%s'", arg);
		return -1;
	}
	o->timeout_s = t;
	return 0;
}

/* With -export, brisk runs no guest: what only a guest uses is refused. */
static int cli_check_daemon(const struct cli_opts *o)
{
	const char *what = o->kernel ? "-kernel" : o->initrd ? "-initrd" :
			   o->append ? "-append" : o->dtb ? "-dtb" :
			   o->dumpdtb ? "-machine dumpdtb" :
			   o->debug_exit ? "-device isa-debug-exit" : NULL;
	const char *dev = "";

	for (unsigned i = 0; !what && i < o->nr_blk; i++) {
		if (o->blk[i].kind == CLI_BLK_CHARDEV)
			what = "-chardev";
		if (o->blk[i].kind == CLI_BLK_DEVICE) {
			what = "-device";
			dev = o->blk[i].arg;	/* named by its first token */
		}
	}
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
	OPT_RTC, OPT_SNAPSHOT, OPT_NODEFAULTS, OPT_NOOP,
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
	{ "chardev", OPT_CHARDEV, true },
	{ "cpu", OPT_FIXED, true }, { "display", OPT_FIXED, true },
	{ "vga", OPT_FIXED, true }, { "monitor", OPT_FIXED, true },
	{ "parallel", OPT_FIXED, true },
	{ "net", OPT_FIXED, true }, { "nic", OPT_FIXED, true },
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
	case OPT_FIXED: return parse_fixed(name, arg);
	case OPT_ACTION: return parse_action(arg, o);
	case OPT_RTC: return parse_rtc(arg, o);
	case OPT_SNAPSHOT: o->snapshot = true; return 0;
	case OPT_NODEFAULTS: o->nodefaults = true; return 0;
	case OPT_NOOP: return 0;
	case OPT_KERNEL: o->kernel = arg; return 0;
	case OPT_INITRD: o->initrd = arg; return 0;
	case OPT_DTB: o->dtb = arg; return 0;
	case OPT_MACHINE: return parse_machine(arg, o);
	case OPT_APPEND: o->append = arg; return 0;
	case OPT_NAME: o->name = arg; return 0;
	case OPT_M: return parse_mem(arg, o);
	case OPT_SMP: return parse_smp(arg, o);
	case OPT_SERIAL: return parse_serial(arg, o);
	case OPT_DEVICE: return parse_device(arg, o);
	case OPT_DRIVE: return add_blk(o, CLI_BLK_DRIVE, arg);
	case OPT_EXPORT: return add_blk(o, CLI_BLK_EXPORT, arg);
	case OPT_CHARDEV: return add_blk(o, CLI_BLK_CHARDEV, arg);
	case OPT_TIMEOUT: return parse_timeout(arg, o);
	case OPT_NOGRAPHIC: return 0;	/* brisk has no display anyway */
	case OPT_NOREBOOT: return 0;	/* a guest reboot always ends brisk */
	case OPT_HELP: o->action = CLI_HELP; return 0;
	case OPT_VERSION: o->action = CLI_VERSION; return 0;
	case OPT_ACCEL: return parse_accel(arg, o);
	case OPT_CHECK_KVM: o->action = CLI_CHECK_KVM; return 0;
	}
	return -1;
}

int cli_parse(int argc, char **argv, struct cli_opts *o)
{
	*o = (struct cli_opts){
		.action = CLI_RUN, .serial = "stdio",
		.ram_size = CLI_DEFAULT_RAM, .ncpus = 1, .kvm_check = true,
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
		if (apply(o, options[k].id, options[k].name, arg))
			return -1;
		if (o->action != CLI_RUN)
			return 0;
	}
	/* As QEMU: -nodefaults leaves no serial port that -serial did not ask for. */
	if (o->nodefaults && !o->serial_given)
		o->serial = "none";
	if (o->nr_exports)
		return cli_check_daemon(o);
	if (!o->kernel && !o->dumpdtb) {
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
	      "  -device pvpanic     accepted: every board has one\n"
	      "  -device isa-debug-exit[,iobase=0x501][,iosize=2]\n"
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
	      "  -device virtio-blk-pci,drive=ID[,packed=off][,num-queues=N]\n"
	      "         [,queue-size=256][,serial=S][,event_idx=on][,indirect_desc=on]\n"
	      "         [,poll-us=2000][,iothreads=1][,irq-coalesce-us=0]\n"
	      "         [,irq-interval-us=0][,logical_block_size=512]\n"
	      "         [,physical_block_size=N]\n"
	      "                      the values shown are the defaults; num-queues\n"
	      "                      is the vCPU count (at most 64), queue-size at\n"
	      "                      most 1024; logical_block_size is the host's\n"
	      "                      O_DIRECT block with cache=none\n"
	      "  -device vhost-user-blk-pci,chardev=ID[,num-queues=N][,queue-size=256]\n"
	      "         [,packed=off][,event_idx=on][,indirect_desc=on]\n"
	      "                      a disk served by a vhost-user back-end\n"
	      "                      (qemu-storage-daemon, brisk -export...)\n"
	      "  -chardev socket,id=ID,path=SOCKET[,reconnect=SECONDS] | socket,id=ID,fd=N\n"
	      "                      the back-end's socket for vhost-user-blk-pci\n"
	      "  -export vhost-user-blk,id=ID,drive=ID,addr.path=SOCKET[,num-queues=1]\n"
	      "         [,queue-size=256][,writable=off][,serial=S][,poll-us=2000]\n"
	      "         [,iothreads=1]\n"
	      "                      serve a drive to vhost-user front-ends (QEMU...)\n"
	      "                      on a Unix socket; brisk then runs no guest\n"
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
	      "-nic none, -no-user-config, -nodefaults (no console unless -serial\n"
	      "gives one).\n"
	      "\n"
	      "  -h, --help          this text\n"
	      "  --version           print the version\n"
	      "\n"
	      "Exit status: 0 guest powered off or rebooted, 1 error, 2 guest\n"
	      "panic, 124 timeout, 128+N signal N, (V << 1) | 1 for isa-debug-exit\n"
	      "value V.  Ctrl-A x on the console quits.\n", stdout);
}
