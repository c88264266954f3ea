-- Fenced offset commit.
-- KEYS[1]: the lock hash    (ls:{topic:queue}:lock:<group>)
-- KEYS[2]: the offset hash  (ls:{topic:queue}:offset:<group>)
-- ARGV[1]: consumer id
-- ARGV[2]: fencing token the consumer was granted
-- ARGV[3]: new committed offset (the next offset to consume)
-- ARGV[4]: completed offsets above it, encoded by the caller ('' when none)
-- Returns: {1, token} on success; {0, current_token} when the token or owner is stale;
--          {-1, current_token} when the caller's lock has expired on the broker side.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = redis.call('HGET', KEYS[1], 'owner')
local token = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if owner ~= ARGV[1] or token ~= tonumber(ARGV[2]) then
  return {0, token}
end
if tonumber(redis.call('HGET', KEYS[1], 'expires_at') or '0') <= now then
  return {-1, token}
end
redis.call('HSET', KEYS[2], 'committed', ARGV[3], 'completed', ARGV[4],
  'token', token, 'updated_at', now)
return {1, token}
