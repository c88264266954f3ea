-- Append one message to a queue's stream with the next dense offset; with an idempotency
-- key, only the first send carrying it appends, and every later one gets its offset back.
-- The idempotency record is in the queue's slot (the message's key picks the queue), so
-- the check and the append are one atomic step.
-- Prelude: produce (workers/lua/_produce.lua: `append_message`)
-- KEYS[1]: the queue's stream            (ls:{topic:queue}:log)
-- KEYS[2]: the queue's offset sequence   (ls:{topic:queue}:seq)
-- KEYS[3]: the queue's wake flag and shard channel (ls:{topic:queue}:wake)
-- KEYS[4]: only with an idempotency key: its record (ls:{topic:queue}:idem:<idempotency key>)
-- ARGV[1]: sharding key
-- ARGV[2]: body (bytes)
-- ARGV[3]: headers as JSON
-- ARGV[4]: approximate max length of the stream (0 = unbounded)
-- ARGV[5]: with KEYS[4]: how long the record is kept, in milliseconds
-- Returns: {offset, produced_at_ms, duplicate}: duplicate 1 when KEYS[4] already named an
--          earlier send (nothing appended; its offset and time), else 0.
if KEYS[4] then
  local seen = redis.call('GET', KEYS[4])
  if seen then
    local offset, at_ms = string.match(seen, '^(%d+):(%d+)$')
    -- A record not in our format was not written here: it names no send, so append.
    if offset then return {tonumber(offset), tonumber(at_ms), 1} end
  end
end
local offset, now_ms = append_message(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if KEYS[4] then
  redis.call('SET', KEYS[4], offset .. ':' .. now_ms, 'PX', ARGV[5])
end
return {offset, now_ms, 0}
