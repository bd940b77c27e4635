# rlockd - build, test, run and benchmark.
#
#   make          build build/rlockd, build/librlock.{so,a}, build/rlock
#   make run      the daemon in the foreground against a private redis-server
#   make install  PREFIX=/usr/local DESTDIR= (make uninstall undoes it)
#   make test     install what is missing, build, run unit + integration tests
#   make test-stress  the integration tests STRESS_RUNS times on busy cores
#   make asan     the same tests against an AddressSanitizer+UBSan build
#   make valgrind the integration tests with the daemon under memcheck
#   make simulate the lock engine's deterministic simulation, many seeds
#   make bench    load generator: rlockd vs. Redis direct, side by side
#   make bench-million  1,000,000 held locks: memory, renewals, idle CPU
#   make fuzz     libFuzzer on the request parser, the glob matcher, the settings,
#                 the cluster map
#                 (clang; FUZZ_TIME seconds each)

CC      ?= cc
BUILD   ?= build
# libcrypto (OpenSSL): SHA-256 of secrets (server/base/digest.c);
# libssl: TLS to Redis (server/base/tls.c) and on the client listener
# (server/base/tls_server.c).
# libmicrohttpd: the metrics and health endpoint (server/front/http.c).
PKGS     = libuv hiredis inih libsystemd libssl libcrypto libmicrohttpd
CFLAGS  ?= -O2 -g
# The project's own flags live apart from CFLAGS, so that `make CFLAGS=...`
# (as the asan target does) adds optimisation/sanitizer flags without
# dropping warnings or include paths. Everything sees protocol/; only the
# daemon and its unit tests see server/ (SERVER_CFLAGS).
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Iprotocol
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)
SERVER_CFLAGS = -Iserver $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
HIREDIS_CFLAGS = $(shell pkg-config --cflags hiredis 2>/dev/null)
LDLIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
OBJCOPY ?= objcopy

# libprotocol (protocol/): the wire contract, linked by the daemon and by
# librlock. Position-independent with hidden visibility, so that linked
# into librlock.so it exports nothing.
PROTOCOL_SRC = $(wildcard protocol/*.c)
PROTOCOL_OBJ = $(patsubst %.c,$(BUILD)/pic/%.o,$(PROTOCOL_SRC))
PROTOCOL_LIB = $(BUILD)/libprotocol.a

SERVER_SRC   = $(wildcard server/*.c server/*/*.c)
# The daemon's layers. The engine is also an archive, build/engine.a,
# which the engine's unit tests and the simulation link with base and
# protocol only; engine.layered checks that it needs nothing above.
layer_obj    = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard server/$(1)/*.c))
BASE_OBJ     = $(call layer_obj,base)
ENGINE_OBJ   = $(call layer_obj,engine)
BACKEND_OBJ  = $(call layer_obj,backend)
FRONT_OBJ    = $(call layer_obj,front)
ENGINE_LIB   = $(BUILD)/engine.a
# The backend's pure parsers, which unit tests check too.
UNIT_BACKEND_OBJ = $(BUILD)/obj/server/backend/cluster_map.o \
                   $(BUILD)/obj/server/backend/keyslot.o
# The daemon's objects but main(): with libprotocol, what the unit tests link.
LIB_OBJ  = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out server/main.c,$(SERVER_SRC))) \
           $(STATUS_PAGE_OBJ)
# The status page (GET /), compiled in as a C string (scripts/embed.sh).
STATUS_PAGE_OBJ = $(BUILD)/gen/status_page.o
MAIN_OBJ = $(BUILD)/obj/server/main.o
UNIT_SRC = $(wildcard tests/unit/*.c)
UNIT_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_SRC))
# The simulation: its own files, and the unit tests' fake clock.
SIM_OBJ  = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/sim/*.c)) \
           $(BUILD)/obj/tests/unit/fake_clock.o

# librlock (client-lib/): position-independent objects serve both the
# shared library and the static one; the `rlock` command (cli/) and the
# client tests link the static one, so they run from the build tree as
# installed.
RLOCK_SO_VERSION = 0.5.0
RLOCK_SONAME     = librlock.so.0
CLIENT_CFLAGS    = -Iclient-lib -pthread $(HIREDIS_CFLAGS)
CLIENT_LIB_SRC   = $(wildcard client-lib/*.c)
CLIENT_LIB_OBJ   = $(patsubst %.c,$(BUILD)/pic/%.o,$(CLIENT_LIB_SRC))
CLI_OBJ          = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard cli/*.c))
CLIENT_TEST_SRC  = $(wildcard tests/client/*.c)
CLIENT_TEST_OBJ  = $(patsubst %.c,$(BUILD)/obj/%.o,$(CLIENT_TEST_SRC))
CLIENT_LIBS      = $(shell pkg-config --libs hiredis libssl libcrypto 2>/dev/null) -pthread
CLIENT_ALL       = $(BUILD)/librlock.so $(BUILD)/librlock.a $(BUILD)/rlock \
                   $(BUILD)/rlock.pc

# Installation paths (`make install PREFIX=/usr DESTDIR=/tmp/pkg`). The
# configuration goes to /etc whatever the PREFIX, where the unit and the
# man page say it is.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
# bash-completion looks here for a command's file, by the command's name.
COMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
# protocol.md, which rlockd.8 points to.
DOCDIR     ?= $(DATADIR)/doc/rlockd
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR ?= /etc

.PHONY: FORCE all deps npm-deps install uninstall run test test-stress unit simulate client integration asan valgrind bench bench-million fuzz fuzz-replay clean format format-check

all: $(BUILD)/rlockd $(CLIENT_ALL) $(BUILD)/engine.layered

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) -MMD -MP -c -o $@ $<

# Libraries' objects: position-independent, and nothing visible outside
# the library but what rlock.h marks RLOCK_API.
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(BUILD)/obj/server/%.o $(BUILD)/obj/tests/unit/%.o: OBJ_CFLAGS = $(SERVER_CFLAGS)
$(BUILD)/obj/tests/sim/%.o: OBJ_CFLAGS = $(SERVER_CFLAGS) -Itests/unit
# What includes rlock.h (the command, the client tests) builds as librlock does;
# the command also reads the release's number (server/base/version.h).
$(BUILD)/pic/client-lib/%.o $(BUILD)/obj/tests/client/%.o: OBJ_CFLAGS = $(CLIENT_CFLAGS)
$(BUILD)/obj/cli/%.o: OBJ_CFLAGS = $(CLIENT_CFLAGS) -Iserver/base

$(PROTOCOL_LIB): $(PROTOCOL_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/librlock.so.$(RLOCK_SO_VERSION): $(CLIENT_LIB_OBJ) $(PROTOCOL_LIB)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(RLOCK_SONAME) -o $@ $^ \
	    $(LDFLAGS) $(CLIENT_LIBS)

$(BUILD)/librlock.so: $(BUILD)/librlock.so.$(RLOCK_SO_VERSION)
	ln -sf librlock.so.$(RLOCK_SO_VERSION) $(BUILD)/$(RLOCK_SONAME)
	ln -sf $(RLOCK_SONAME) $@

# The static library holds one object: librlock's objects and the
# libprotocol members they use, linked together, with every symbol but the
# RLOCK_API ones made local. A program linking it needs nothing more, and
# gets none of protocol/'s names (buffer_*, reply_*...) to clash with its own.
$(BUILD)/pic/librlock.o: $(CLIENT_LIB_OBJ) $(PROTOCOL_LIB)
	$(LD) -r -o $@ $^
	$(OBJCOPY) --localize-hidden $@

$(BUILD)/librlock.a: $(BUILD)/pic/librlock.o
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/rlock: $(CLI_OBJ) $(BUILD)/librlock.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(CLIENT_LIBS)

$(BUILD)/client_tests: $(CLIENT_TEST_OBJ) $(BUILD)/librlock.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(CLIENT_LIBS) $(CHECK_LIBS)

# Templates (*.in) name the installed paths, so they are filled in for
# the PREFIX of each make run; the output is touched only when it changes.
define fill_template
	@mkdir -p $(dir $@)
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
	    -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@VERSION@|$(RLOCK_SO_VERSION)|g' \
	    $< > $@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }
endef

$(BUILD)/rlock.pc: client-lib/rlock.pc.in FORCE
	$(fill_template)

$(BUILD)/rlockd.service: systemd/rlockd.service.in FORCE
	$(fill_template)

# rlockd.8 names the paths of a default install (PREFIX /usr/local); the
# installed page names this install's.
$(BUILD)/rlockd.8: docs/rlockd.8 FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|/usr/local/lib/systemd/system|$(UNITDIR)|g' \
	    -e 's|/usr/local/lib/sysusers.d|$(SYSUSERSDIR)|g' \
	    -e 's|/usr/local/share|$(DATADIR)|g' \
	    $< > $@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }

$(BUILD)/gen/status_page.c: server/front/status_page.html scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh status_page_html $< > $@.tmp && mv $@.tmp $@

$(STATUS_PAGE_OBJ): $(BUILD)/gen/status_page.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/rlockd: $(LIB_OBJ) $(MAIN_OBJ) $(PROTOCOL_LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(ENGINE_LIB): $(ENGINE_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

# The layers, enforced: engine.a may use base, protocol and libraries,
# never a symbol that only server/front or server/backend defines.
$(BUILD)/engine.layered: $(ENGINE_LIB) $(BASE_OBJ) $(PROTOCOL_LIB) $(FRONT_OBJ) $(BACKEND_OBJ)
	@nm -u $(ENGINE_LIB) | awk 'NF == 2 {print $$2}' | sort -u > $@.needs
	@nm -g --defined-only $(ENGINE_LIB) $(BASE_OBJ) $(PROTOCOL_LIB) | awk 'NF == 3 {print $$3}' | sort -u > $@.below
	@nm -g --defined-only $(FRONT_OBJ) $(BACKEND_OBJ) | awk 'NF == 3 {print $$3}' | sort -u > $@.above
	@comm -12 $@.needs $@.above | comm -23 - $@.below > $@.bad
	@if [ -s $@.bad ]; then \
	    echo "engine.a uses what only server/front or server/backend defines:" >&2; \
	    cat $@.bad >&2; rm -f $@.needs $@.below $@.above $@.bad; exit 1; \
	fi
	@rm -f $@.needs $@.below $@.above $@.bad
	@touch $@

# The whole engine archive, so that every engine object must link with
# what follows it: base and protocol (and the backend's pure parsers for
# the unit tests), never the front end or the rest of the backend.
WHOLE_ENGINE = -Wl,--whole-archive $(ENGINE_LIB) -Wl,--no-whole-archive

$(BUILD)/unit_tests: $(UNIT_OBJ) $(ENGINE_LIB) $(UNIT_BACKEND_OBJ) $(BASE_OBJ) $(PROTOCOL_LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $(UNIT_OBJ) $(WHOLE_ENGINE) $(UNIT_BACKEND_OBJ) $(BASE_OBJ) \
	    $(PROTOCOL_LIB) $(LDFLAGS) $(LDLIBS) $(CHECK_LIBS)

$(BUILD)/sim_tests: $(SIM_OBJ) $(ENGINE_LIB) $(BASE_OBJ) $(PROTOCOL_LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $(SIM_OBJ) $(WHOLE_ENGINE) $(BASE_OBJ) $(PROTOCOL_LIB) \
	    $(LDFLAGS) $(LDLIBS)

# The load generator (bench/): its own files behind bench/bench.h, on
# hiredis alone.
BENCH_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard bench/*.c))
$(BUILD)/obj/bench/%.o: OBJ_CFLAGS = $(HIREDIS_CFLAGS)

$(BUILD)/rlockd-bench: $(BENCH_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(shell pkg-config --libs hiredis) -lpthread -lm

deps:
	@scripts/install-deps.sh

# An existing rlockd.ini is never overwritten. The installed one differs
# from conf/rlockd.ini in one line: the service's Unix socket, in the
# RuntimeDirectory its unit creates.
INSTALLED_CONF = $(DESTDIR)$(SYSCONFDIR)/rlockd/rlockd.ini
install: all $(BUILD)/rlockd.service $(BUILD)/rlockd.8
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(SYSCONFDIR)/rlockd $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(BUILD)/rlockd $(DESTDIR)$(SBINDIR)/rlockd
	install -m 755 $(BUILD)/rlock $(DESTDIR)$(BINDIR)/rlock
	install -m 755 $(BUILD)/librlock.so.$(RLOCK_SO_VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf librlock.so.$(RLOCK_SO_VERSION) $(DESTDIR)$(LIBDIR)/$(RLOCK_SONAME)
	ln -sf $(RLOCK_SONAME) $(DESTDIR)$(LIBDIR)/librlock.so
	install -m 644 $(BUILD)/librlock.a $(DESTDIR)$(LIBDIR)/librlock.a
	install -m 644 client-lib/rlock.h $(DESTDIR)$(INCLUDEDIR)/rlock.h
	install -m 644 $(BUILD)/rlock.pc $(DESTDIR)$(LIBDIR)/pkgconfig/rlock.pc
	install -m 644 $(BUILD)/rlockd.service $(DESTDIR)$(UNITDIR)/rlockd.service
	install -m 644 systemd/rlockd.socket $(DESTDIR)$(UNITDIR)/rlockd.socket
	install -m 644 systemd/rlockd.sysusers $(DESTDIR)$(SYSUSERSDIR)/rlockd.conf
	install -m 644 $(BUILD)/rlockd.8 $(DESTDIR)$(MANDIR)/man8/rlockd.8
	install -m 644 docs/protocol.md $(DESTDIR)$(DOCDIR)/protocol.md
	install -m 644 docs/rlock.1 $(DESTDIR)$(MANDIR)/man1/rlock.1
	install -m 644 cli/rlock.bash-completion $(DESTDIR)$(COMPLETIONDIR)/rlock
	@if [ -e $(INSTALLED_CONF) ]; then \
	    echo "keeping existing $(INSTALLED_CONF)"; \
	else \
	    sed '/^\[server\]/,/^\[/s|^unix_socket =.*|unix_socket = /run/rlockd/rlockd.sock|' \
	        conf/rlockd.ini > $(INSTALLED_CONF).tmp && \
	    chmod 640 $(INSTALLED_CONF).tmp && mv $(INSTALLED_CONF).tmp $(INSTALLED_CONF) && \
	    echo "installed $(INSTALLED_CONF)"; \
	fi
	@# The service's user: systemd-sysusers creates it at boot only after
	@# an update of /usr, so a real install (no DESTDIR) creates it now.
	@if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
	    systemd-sysusers $(SYSUSERSDIR)/rlockd.conf; \
	fi
	@# The configuration may hold passwords: readable by the service's
	@# group, not by everyone (0640, group rlockd once it exists).
	@if [ -z "$(DESTDIR)" ] && getent group rlockd >/dev/null; then \
	    chgrp rlockd $(INSTALLED_CONF); \
	fi

# Removes what install put in place but the configuration, which may hold
# the operator's settings.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/rlockd $(DESTDIR)$(BINDIR)/rlock \
	    $(DESTDIR)$(LIBDIR)/librlock.so.$(RLOCK_SO_VERSION) \
	    $(DESTDIR)$(LIBDIR)/$(RLOCK_SONAME) $(DESTDIR)$(LIBDIR)/librlock.so \
	    $(DESTDIR)$(LIBDIR)/librlock.a $(DESTDIR)$(INCLUDEDIR)/rlock.h \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/rlock.pc \
	    $(DESTDIR)$(UNITDIR)/rlockd.service $(DESTDIR)$(UNITDIR)/rlockd.socket \
	    $(DESTDIR)$(SYSUSERSDIR)/rlockd.conf \
	    $(DESTDIR)$(MANDIR)/man8/rlockd.8 $(DESTDIR)$(MANDIR)/man1/rlock.1 \
	    $(DESTDIR)$(COMPLETIONDIR)/rlock $(DESTDIR)$(DOCDIR)/protocol.md
	@echo "left in place: $(INSTALLED_CONF)"

# Debian packages (debian/): rlockd, librlock0, librlock-dev, rlock and
# python3-rlockd, with their -dbgsym, the .changes and .buildinfo, in
# $(BUILD)/deb/; then
# lintian on them when it is installed (an error fails). dpkg-buildpackage
# writes next to the tree it builds, so it builds a copy in
# $(BUILD)/deb-src/: nothing lands outside $(BUILD). The package build
# runs the unit tests; DEB_BUILD_OPTIONS=nocheck skips them.
.PHONY: deb
DEB_DIR = $(BUILD)/deb
DEB_SRC = $(BUILD)/deb-src
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
	    { echo "make deb: needs dpkg-dev and debhelper (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
	rm -rf $(DEB_DIR) $(DEB_SRC)
	mkdir -p $(DEB_DIR) $(DEB_SRC)/rlockd
	tar -cf - --exclude=./.git --exclude=./build --exclude=./run --exclude=./$(BUILD) \
	    --exclude=__pycache__ . | tar -xf - -C $(DEB_SRC)/rlockd
	@# With the system's tools only, as a Debian build daemon: pybuild runs
	@# the python3.X first on PATH, which must be Debian's (pyenv's lacks
	@# the build module and would build for itself).
	cd $(DEB_SRC)/rlockd && PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -us -uc -b -jauto
	find $(DEB_SRC) -maxdepth 1 -type f -exec mv -t $(DEB_DIR) {} +
	rm -rf $(DEB_SRC)
	@if command -v lintian >/dev/null; then \
	    echo "lintian $(DEB_DIR)/*.changes"; lintian -I --fail-on error $(DEB_DIR)/*.changes; \
	else \
	    echo "make deb: lintian not installed, packages not checked (apt-get install lintian)"; \
	fi
	@ls -1 $(DEB_DIR)/*.deb

# The Node package as npm publishes it, in $(BUILD)/npm-pack/: an
# installable tarball (npm install ./rlockd-<version>.tgz), whose only
# dependency, ioredis, npm fetches.
.PHONY: npm-pack
npm-pack:
	@command -v npm >/dev/null || { echo "make npm-pack: needs npm (apt-get install npm)" >&2; exit 1; }
	rm -rf $(BUILD)/npm-pack && mkdir -p $(BUILD)/npm-pack
	cd clients/node && npm pack --silent --pack-destination $(abspath $(BUILD)/npm-pack)
	@ls -1 $(BUILD)/npm-pack/*.tgz

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run-dev.sh

# The Node example's ioredis, shared by every build tree (make asan too).
NPM_DIR = build/npm
npm-deps:
	@scripts/install-npm-deps.sh $(NPM_DIR)

test: deps npm-deps
	@$(MAKE) --no-print-directory format-check all $(BUILD)/unit_tests $(BUILD)/client_tests
	@$(MAKE) --no-print-directory unit fuzz-replay client integration

# The lock engine's deterministic simulation (tests/sim/), of every lock
# kind: make test runs SIM_SEEDS seeds, make simulate SIMULATE_SEEDS;
# SIM_SEED=<n> replays one, SIM_KIND=<mode> runs every seed as one kind.
SIM_SEEDS      ?= 2000
SIMULATE_SEEDS ?= 100000

unit: $(BUILD)/unit_tests $(BUILD)/sim_tests
	$(BUILD)/unit_tests
	SIM_SEEDS=$(SIM_SEEDS) $(BUILD)/sim_tests

simulate: $(BUILD)/sim_tests
	SIM_SEEDS=$(SIMULATE_SEEDS) $(BUILD)/sim_tests

# librlock's Check tests, against a real rlockd and redis-server.
client: $(BUILD)/client_tests $(BUILD)/rlockd
	RLOCKD_BIN=$(abspath $(BUILD)/rlockd) $(BUILD)/client_tests

# What the integration tests run: the daemon, the rlock command, the build
# tree (for `make install` into a DESTDIR), and the examples' npm modules.
INTEGRATION_ENV = RLOCK_BIN=$(abspath $(BUILD)/rlock) RLOCKD_BUILD=$(abspath $(BUILD)) \
                  NODE_PATH=$(abspath $(NPM_DIR)/node_modules)

integration: all
	RLOCKD_BIN=$(abspath $(BUILD)/rlockd) $(INTEGRATION_ENV) python3 tests/integration/run.py

# The integration suite STRESS_RUNS times, modules in a random order, with a
# busy process on every core: the tests that failed in any run, and how often.
STRESS_RUNS ?= 3
test-stress: deps npm-deps
	@$(MAKE) --no-print-directory all
	RLOCKD_BIN=$(abspath $(BUILD)/rlockd) $(INTEGRATION_ENV) STRESS_RUNS=$(STRESS_RUNS) \
	    python3 tests/integration/stress.py

# Sanitizer build in its own tree, so it never mixes with the normal one.
# A refused huge allocation must return NULL, as it does without ASan: the
# reply writer's all-or-nothing test and rlockd's own limits rely on it.
asan: deps npm-deps
	@ASAN_OPTIONS="allocator_may_return_null=1$${ASAN_OPTIONS:+:$$ASAN_OPTIONS}" \
	    RLOCKD_TEST_LDFLAGS="-fsanitize=address,undefined" $(MAKE) --no-print-directory BUILD=build/asan \
	    CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" unit client integration

# The daemon under memcheck; an error or a leak fails the test that stopped
# it. Then librlock's tests under memcheck (in one process: CK_FORK=no).
# One module at a time (RLOCKD_TEST_JOBS): memcheck is CPU-bound.
valgrind: deps npm-deps all $(BUILD)/client_tests
	@command -v valgrind >/dev/null || { echo "valgrind: not installed (apt-get install valgrind)"; exit 1; }
	RLOCKD_TEST_JOBS=$${RLOCKD_TEST_JOBS:-1} RLOCKD_REAL_BIN=$(abspath $(BUILD)/rlockd) $(INTEGRATION_ENV) \
	    RLOCKD_BIN=$(abspath scripts/valgrind-rlockd.sh) python3 tests/integration/run.py
	CK_FORK=no RLOCKD_BIN=$(abspath $(BUILD)/rlockd) valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=1 $(BUILD)/client_tests

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/rlockd-bench
	@bench/run.sh $(abspath $(BUILD))

# 1,000,000 held locks alone (opt-in: minutes, and ~1 GB of memory).
bench-million: deps
	@$(MAKE) --no-print-directory all $(BUILD)/rlockd-bench
	@bench/run.sh $(abspath $(BUILD)) --held-only --held 1000000 \
	    --held-clients 16 --held-window 25

# Coverage-guided fuzzing of the request parser, command decoder and reply
# writer (clang with libFuzzer: Debian's clang and libclang-rt-14-dev).
# New inputs go to $(BUILD)/fuzz-corpus; tests/fuzz/corpus holds the seeds
# and is only read. Crashes land in $(BUILD)/fuzz-artifacts/.
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_FLAGS  = -g -O1 -fno-omit-frame-pointer \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(BUILD)/fuzz_request: tests/fuzz/fuzz_request.c tests/fuzz/fuzz_check.h $(PROTOCOL_SRC) $(wildcard protocol/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_request.c $(PROTOCOL_SRC)

# The glob matcher (server/base/glob.c) reads clients' lock names.
$(BUILD)/fuzz_glob: tests/fuzz/fuzz_glob.c tests/fuzz/fuzz_check.h server/base/glob.c server/base/glob.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) -Iserver $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_glob.c server/base/glob.c

# The settings' value parsers (server/base/config_value.c) read operator
# text, [redis] sentinels an address list among them.
CONFIG_FUZZ_SRC = $(wildcard server/base/config*.c) server/base/acl.c server/base/glob.c $(PROTOCOL_SRC) \
                  server/base/log.c server/base/digest.c
$(BUILD)/fuzz_config: tests/fuzz/fuzz_config.c tests/fuzz/fuzz_check.h $(CONFIG_FUZZ_SRC) $(wildcard server/base/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) -Iserver $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_config.c \
	    $(CONFIG_FUZZ_SRC) -linih -lcrypto

# What Redis Cluster nodes send (server/backend/cluster_map.c): CLUSTER
# NODES text and MOVED/ASK redirections.
CLUSTER_FUZZ_SRC = server/backend/cluster_map.c server/backend/keyslot.c
$(BUILD)/fuzz_cluster_map: tests/fuzz/fuzz_cluster_map.c tests/fuzz/fuzz_check.h $(CLUSTER_FUZZ_SRC) \
                           server/backend/cluster_map.h server/backend/redis_addr.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) -Iserver $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_cluster_map.c \
	    $(CLUSTER_FUZZ_SRC)

# make test's share of the fuzzing: each target built with the normal
# compiler and warnings, tests/fuzz/replay.c in place of libFuzzer, runs
# its seed inputs once, so that a target that stopped compiling or a seed
# that breaks a property fails make test, which has no clang.
define fuzz_replay
$(BUILD)/fuzz-replay/$(1): tests/fuzz/replay.c tests/fuzz/fuzz_check.h tests/fuzz/fuzz_$(1).c $(2)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_CFLAGS) -Iserver -g -O1 -o $$@ tests/fuzz/replay.c tests/fuzz/fuzz_$(1).c $(2) $(3)
endef
$(eval $(call fuzz_replay,request,$(PROTOCOL_SRC)))
$(eval $(call fuzz_replay,glob,server/base/glob.c))
$(eval $(call fuzz_replay,config,$(CONFIG_FUZZ_SRC),-linih -lcrypto))
$(eval $(call fuzz_replay,cluster_map,$(CLUSTER_FUZZ_SRC)))

fuzz-replay: $(addprefix $(BUILD)/fuzz-replay/,request glob config cluster_map)
	@$(BUILD)/fuzz-replay/request tests/fuzz/corpus/*
	@$(BUILD)/fuzz-replay/cluster_map tests/fuzz/cluster-corpus/*
	@$(BUILD)/fuzz-replay/glob
	@$(BUILD)/fuzz-replay/config

fuzz: $(BUILD)/fuzz_request $(BUILD)/fuzz_glob $(BUILD)/fuzz_config $(BUILD)/fuzz_cluster_map
	@mkdir -p $(BUILD)/fuzz-corpus $(BUILD)/fuzz-glob-corpus $(BUILD)/fuzz-artifacts
	$(BUILD)/fuzz_request -max_total_time=$(FUZZ_TIME) -max_len=8192 \
	    -dict=tests/fuzz/request.dict \
	    -artifact_prefix=$(abspath $(BUILD))/fuzz-artifacts/ \
	    $(BUILD)/fuzz-corpus tests/fuzz/corpus
	$(BUILD)/fuzz_glob -max_total_time=$(FUZZ_TIME) -max_len=512 \
	    -artifact_prefix=$(abspath $(BUILD))/fuzz-artifacts/ \
	    $(BUILD)/fuzz-glob-corpus
	@mkdir -p $(BUILD)/fuzz-config-corpus
	$(BUILD)/fuzz_config -max_total_time=$(FUZZ_TIME) -max_len=1100 \
	    -artifact_prefix=$(abspath $(BUILD))/fuzz-artifacts/ \
	    $(BUILD)/fuzz-config-corpus
	@mkdir -p $(BUILD)/fuzz-cluster-corpus
	$(BUILD)/fuzz_cluster_map -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    -artifact_prefix=$(abspath $(BUILD))/fuzz-artifacts/ \
	    $(BUILD)/fuzz-cluster-corpus tests/fuzz/cluster-corpus

# Every C file follows .clang-format: make format rewrites them, and
# make test runs format-check first, which changes nothing and fails on the
# first file that differs (clang-format 14, Debian 12's, as install-deps
# installs; another version may wrap lines differently).
FORMAT_SRC = $(wildcard protocol/*.[ch] server/*.c server/*/*.[ch] client-lib/*.[ch] cli/*.[ch] \
    tests/unit/*.[ch] tests/sim/*.[ch] tests/client/*.[ch] tests/fuzz/*.c bench/*.[ch])
format:
	clang-format -i $(FORMAT_SRC)

format-check:
	@command -v clang-format >/dev/null || { echo "format-check: clang-format not installed (apt-get install clang-format)" >&2; exit 1; }
	@clang-format --dry-run -Werror $(FORMAT_SRC) || { echo "format-check: run make format" >&2; exit 1; }

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)
