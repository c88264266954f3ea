-- Append one message to a queue's stream with the next dense offset.
-- Prelude: produce (workers/lua/_produce.lua: `append_message`)
-- KEYS[1]: the queue's stream            (ls:{topic:queue}:log)
-- KEYS[2]: the queue's offset sequence   (ls:{topic:queue}:seq)
-- ARGV[1]: sharding key
-- ARGV[2]: body (bytes)
-- ARGV[3]: headers as JSON
-- ARGV[4]: approximate max length of the stream (0 = unbounded)
-- Returns: {offset, produced_at_ms}
local offset, now_ms = append_message(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return {offset, now_ms}
