-- Record an ingester's heartbeat and list the live ingesters, Redis's clock for all of
-- them (so ingesters on hosts whose clocks differ agree on who is alive).
-- KEYS[1]: the members sorted set (lockstep-web:ingest:members), member = ingester id,
--          score = when its membership expires (ms, Redis clock)
-- ARGV[1]: the caller's ingester id ('' to only list)
-- ARGV[2]: time to live of a membership in ms; the set itself expires twice as late, so
--          a deployment whose ingesters are all gone leaves nothing behind
-- Returns: the live members (the caller included), sorted by id.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], 2 * ttl)
end
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
return members
