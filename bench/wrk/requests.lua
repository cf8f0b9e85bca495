-- The requests of one benchmark scenario, for wrk (the load generator of
-- record of bench/run.sh; Debian package wrk):
--
--   wrk -t2 -c32 -d5s --timeout 30s -s bench/wrk/requests.lua \
--       -H "Authorization: Bearer $KEY" http://127.0.0.1:8080 -- FILE THREADS [START [once]]
--
-- FILE holds one request a line: METHOD PATH [BODY], the body being the
-- rest of the line (JSON on one line), sent with Content-Type
-- application/json. THREADS must be wrk's -t. The requests of a run are
-- numbered START (default 0), START+1, ... as if one client sent them all,
-- and request n is line n modulo the number of lines: thread i of T sends
-- requests START+i, START+i+T, ..., so the requests in flight together are neighbouring lines,
-- as with bench/loadgen. {{.N}} in a path or body becomes the request's
-- number. With "once" each line is sent at most once, and a thread whose
-- lines have run out stops when its last request has been answered; when
-- every thread has, the run is measured up to the last stop (wrk itself
-- waits for -d to pass). A file of one line
-- without {{.N}} makes a static request: wrk then sends the same
-- preformatted bytes, as it does without a script.
--
-- At the end it prints one line of JSON, the figures of bench/run.sh:
-- seconds, requests (answers), ok (answers below 400: wrk counts statuses
-- over 399 as errors), errors (those, plus socket errors and timeouts),
-- rps (ok per second), latency_ms (wrk's percentiles, which include its
-- correction for coordinated omission), socket_errors, and with "once"
-- lines_used (the highest line number sent) and exhausted (every thread
-- ran out of lines). sent is the number of requests sent, answered or not:
-- the START of a next run that should go on where this one stopped (a
-- warm-up, or the runs of a scenario whose requests change what the next
-- ones do, such as moving keys between guardrails and back).

local ffi = require("ffi")
ffi.cdef([[
struct bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clock, struct bench_timespec *ts);
]])
local timespec = ffi.new("struct bench_timespec")

-- now returns the monotonic clock in seconds.
local function now()
   ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
   return tonumber(timespec.tv_sec) + tonumber(timespec.tv_nsec) / 1e9
end

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

-- parse splits a line into its method, path and body.
local function parse(line)
   local method, path, body = line:match("^(%S+)%s+(%S+)%s*(.-)%s*$")
   if not method then
      error("requests file: want METHOD PATH [BODY], got: " .. line)
   end
   if body == "" then
      body = nil
   end
   local dynamic = path:find("{{.N}}", 1, true) or (body and body:find("{{.N}}", 1, true))
   return { method = method, path = path, body = body, dynamic = dynamic }
end

-- headers returns the command line's headers (Host included), with a
-- Content-Type for a body.
local function headers(body)
   local h = {}
   for k, v in pairs(wrk.headers) do
      h[k] = v
   end
   if body and not h["Content-Type"] then
      h["Content-Type"] = "application/json"
   end
   return h
end

-- format returns the bytes of request r with sequence number n.
local function format(r, n)
   local path, body = r.path, r.body
   if r.dynamic then
      local s = tostring(n)
      path = path:gsub("{{%.N}}", s)
      if body then
         body = body:gsub("{{%.N}}", s)
      end
   end
   return wrk.format(r.method, path, headers(body), body)
end

local lines, bytes = {}, {}
local seq, stride = 0, 1
local once = false
-- wrk calls request() once on the first thread before the run, to check
-- the request it returns: that call must not use up a request.
local checked = false

-- Read by done() through thread:get: started and stopped are the monotonic
-- times of a thread's first request and of its stop.
sent, answered, lines_used, started, stopped = 0, 0, 0, nil, nil

local function answer()
   answered = answered + 1
end

function init(args)
   local file, nthreads = args[1], tonumber(args[2])
   if not file or not nthreads then
      error("requests.lua: want -- FILE THREADS [START [once]]")
   end
   once, stride, seq = args[4] == "once", nthreads, (tonumber(args[3]) or 0) + id
   checked = id ~= 0
   for line in io.lines(file) do
      if line:find("%S") then
         lines[#lines + 1] = parse(line)
      end
   end
   if #lines == 0 then
      error("requests.lua: " .. file .. " holds no request")
   end
   if #lines == 1 and not once and not lines[1].dynamic then
      local r = lines[1]
      wrk.method, wrk.path, wrk.body, wrk.headers = r.method, r.path, r.body, headers(r.body)
      request = nil
      return
   end
   if once then
      response = answer
   end
   for i, r in ipairs(lines) do
      if not r.dynamic then
         bytes[i] = format(r)
      end
   end
end

-- build returns the bytes of request n.
local function build(n)
   local i = n % #lines + 1
   return bytes[i] or format(lines[i], n)
end

function request()
   if not checked then
      checked = true
      return build(seq)
   end
   if once and seq >= #lines then
      -- An empty request leaves the connection idle.
      if answered == sent and not stopped then
         stopped = now()
         wrk.thread:stop()
      end
      return ""
   end
   local n = seq
   seq, sent = seq + stride, sent + 1
   if once then
      lines_used = n + 1
      started = started or now()
   end
   return build(n)
end

function done(summary, latency, requests)
   local e = summary.errors
   local socket = e.connect + e.read + e.write + e.timeout
   local seconds = summary.duration / 1e6
   local ok = summary.requests - e.status
   local used, dry, first, last, total = 0, true, math.huge, 0, 0
   for _, t in ipairs(threads) do
      used = math.max(used, t:get("lines_used") or 0)
      total = total + (t:get("sent") or 0)
      dry = dry and t:get("stopped") ~= nil
      first, last = math.min(first, t:get("started") or math.huge), math.max(last, t:get("stopped") or 0)
   end
   if dry and last > first then
      seconds = last - first
   end
   local function ms(us)
      return us / 1000
   end
   io.write(string.format(
      '{"generator":"wrk","seconds":%.3f,"requests":%d,"ok":%d,"errors":%d,"rps":%.1f,' ..
      '"latency_ms":{"min":%.3f,"mean":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f},' ..
      '"status_errors":%d,"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},' ..
      '"sent":%d,"lines_used":%d,"exhausted":%s}\n',
      seconds, summary.requests, ok, e.status + socket, seconds > 0 and ok / seconds or 0,
      ms(latency.min), ms(latency.mean), ms(latency:percentile(50)), ms(latency:percentile(90)),
      ms(latency:percentile(99)), ms(latency:percentile(99.9)), ms(latency.max),
      e.status, e.connect, e.read, e.write, e.timeout, total, used, tostring(dry)))
end
