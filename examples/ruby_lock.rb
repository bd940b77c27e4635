#!/usr/bin/env ruby
# ruby_lock.rb - an rlockd lock from Ruby, with ruby-redis's call.
#
#     ruby examples/ruby_lock.rb NAME [HOST:PORT]
#
# Without HOST:PORT, $RLOCK_ADDR, else 127.0.0.1:7379. Prints
# "locked <owner>" once it holds the lock NAME, keeps it until a line (or
# end of file) comes on stdin, unlocks, prints "unlocked" and exits 0.
# Needs ruby-redis 4 (Debian: ruby-redis; or gem install redis).
require "redis"
$stdout.sync = true # "locked ..." goes out at once

abort "usage: ruby_lock.rb NAME [HOST:PORT]" unless [1, 2].include?(ARGV.size)
name = ARGV[0]
host, _, port = (ARGV[1] || ENV["RLOCK_ADDR"] || "127.0.0.1:7379").rpartition(":")

# read_timeout 0: a LOCK may wait longer than ruby-redis's 5 s default.
# reconnect_attempts 0: a lock belongs to its connection's client-id and
# goes with it; a new connection would be another owner.
rlockd = Redis.new(host: host, port: port.to_i, read_timeout: 0, reconnect_attempts: 0)
tid = Thread.current.native_thread_id # the owner is <client-id>:<thread-id>

rlockd.call("LOCK", name, tid) # waits while another owner holds it
puts "locked #{rlockd.call("CLIENTID")}:#{tid}"
$stdin.gets # ... the work done under the lock ...
released = rlockd.call("UNLOCK", name, tid) # 1: released, 0: still held (reentrant)
puts released == 1 ? "unlocked" : "still held"
rlockd.close
