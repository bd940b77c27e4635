# rlockd - build, test, run and benchmark.
#
#   make          build build/rlockd
#   make run      the daemon in the foreground against a private redis-server
#   make test     install what is missing, build, run unit + integration tests
#   make asan     the same tests against an AddressSanitizer+UBSan build
#   make valgrind the integration tests with the daemon under memcheck
#   make bench    load generator: rlockd vs. Redis direct, side by side
#   make fuzz     libFuzzer on the request parser (clang; FUZZ_TIME seconds)

CC      ?= cc
BUILD   ?= build
PKGS     = libuv hiredis inih
CFLAGS  ?= -O2 -g
# The project's own flags live apart from CFLAGS, so that `make CFLAGS=...`
# (as the asan target does) adds optimisation/sanitizer flags without
# dropping warnings or include paths.
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Iprotocol -Iserver \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)
LDLIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

PROTOCOL_SRC = $(wildcard protocol/*.c)
SERVER_SRC   = $(wildcard server/*.c)
# Objects the unit tests link: everything but the daemon's main().
LIB_OBJ  = $(patsubst %.c,$(BUILD)/obj/%.o,$(PROTOCOL_SRC) $(filter-out server/main.c,$(SERVER_SRC)))
MAIN_OBJ = $(BUILD)/obj/server/main.o
UNIT_SRC = $(wildcard tests/unit/*.c)
UNIT_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_SRC))

.PHONY: all deps run test unit integration asan valgrind bench fuzz clean format

all: $(BUILD)/rlockd

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/rlockd: $(LIB_OBJ) $(MAIN_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/unit_tests: $(LIB_OBJ) $(UNIT_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS) $(CHECK_LIBS)

$(BUILD)/rlockd-bench: bench/rlockd_bench.c
	@mkdir -p $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDFLAGS) $(shell pkg-config --libs hiredis) -lpthread -lm

deps:
	@scripts/install-deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run-dev.sh

test: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit_tests
	@$(MAKE) --no-print-directory unit integration

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

integration: $(BUILD)/rlockd
	RLOCKD_BIN=$(abspath $(BUILD)/rlockd) python3 tests/integration/run.py

# Sanitizer build in its own tree, so it never mixes with the normal one.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build/asan \
	    CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" unit integration

# The daemon under memcheck; an error or a leak fails the test that stopped it.
valgrind: deps all
	@command -v valgrind >/dev/null || { echo "valgrind: not installed (apt-get install valgrind)"; exit 1; }
	RLOCKD_REAL_BIN=$(abspath $(BUILD)/rlockd) \
	    RLOCKD_BIN=$(abspath scripts/valgrind-rlockd.sh) python3 tests/integration/run.py

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/rlockd-bench
	@bench/run.sh $(abspath $(BUILD))

# Coverage-guided fuzzing of the request parser, command decoder and reply
# writer (clang with libFuzzer: Debian's clang and libclang-rt-14-dev).
# New inputs go to $(BUILD)/fuzz-corpus; tests/fuzz/corpus holds the seeds
# and is only read. Crashes land in $(BUILD)/fuzz-artifacts/.
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_FLAGS  = -g -O1 -fno-omit-frame-pointer \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(BUILD)/fuzz_request: tests/fuzz/fuzz_request.c $(PROTOCOL_SRC) $(wildcard protocol/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_request.c $(PROTOCOL_SRC)

fuzz: $(BUILD)/fuzz_request
	@mkdir -p $(BUILD)/fuzz-corpus $(BUILD)/fuzz-artifacts
	$(BUILD)/fuzz_request -max_total_time=$(FUZZ_TIME) -max_len=8192 \
	    -dict=tests/fuzz/request.dict \
	    -artifact_prefix=$(abspath $(BUILD))/fuzz-artifacts/ \
	    $(BUILD)/fuzz-corpus tests/fuzz/corpus

format:
	clang-format -i protocol/*.[ch] server/*.[ch] tests/unit/*.[ch] tests/fuzz/*.c bench/*.c

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
