# Which slices of a large binary keep it alive, and which a collection turns into
# binaries of their own, on the node this runs on (the course: OTP 25, jiffy 1.1.1).
#
#     elixir solutions/03-elixir-refc-binaries/binary_rules.exs
#
# Each line: the slice's size, and `:binary.referenced_byte_size/1` (the size of the
# binary it keeps alive) before and after a collection of the process that holds it.
# tools/leaklab/tests/test_binary_rules_03.py runs this and checks every figure.
defmodule BinaryRules do
  # A JSON document of about 1 KB (a refc binary: over 64 bytes). jiffy returns an
  # unescaped string as a slice of the document it decoded.
  defp decoded_etag(size) do
    doc = ~s({"etag":"#{String.duplicate("e", size)}","pad":"#{String.duplicate("p", 1_000)}"})
    :jiffy.decode(doc, [:return_maps])["etag"]
  end

  defp referenced_before_and_after_gc(slice) do
    before = :binary.referenced_byte_size(slice)
    :erlang.garbage_collect()
    {byte_size(slice), before, :binary.referenced_byte_size(slice)}
  end

  # Kept by the process that decoded it (the broken channel's case).
  def made_here(size), do: referenced_before_and_after_gc(decoded_etag(size))

  # Sent to another process, which keeps it (stage 2's case: a worker decodes, the
  # channel keeps the etags it gets back in a message).
  def received(size) do
    me = self()
    slice = decoded_etag(size)

    holder =
      spawn(fn ->
        receive do
          {:slice, s} -> send(me, {:measured, referenced_before_and_after_gc(s)})
        end
      end)

    send(holder, {:slice, slice})

    receive do
      {:measured, figures} -> figures
    end
  end

  # Cut from a 1,000-byte binary by a binary pattern in compiled code.
  def matched(size) do
    big = :binary.copy("x", 1_000)
    <<slice::binary-size(size), _::binary>> = big
    {size, :binary.referenced_byte_size(slice)}
  end

  def report do
    for size <- [20, 24, 32, 40] do
      {n, before, after_gc} = made_here(size)
      IO.puts("made here  #{n} B: #{before} B referenced before the collection, #{after_gc} B after")
    end

    for size <- [20, 40] do
      {n, before, after_gc} = received(size)
      IO.puts("received   #{n} B: #{before} B referenced before the collection, #{after_gc} B after")
    end

    for size <- [20, 64, 65] do
      {n, referenced} = matched(size)
      IO.puts("matched    #{n} B: #{referenced} B referenced")
    end
  end
end

BinaryRules.report()
IO.puts("OTP #{:erlang.system_info(:otp_release)}")
