defmodule SocketApi.ProtocolTest do
  use ExUnit.Case, async: true

  alias SocketApi.Protocol

  test "decodes the three client messages" do
    assert {:ok, {:join, "1", "t"}} = Protocol.decode(~s({"type":"join","ref":"1","topic":"t"}))
    assert {:ok, {:leave, "2", "t"}} = Protocol.decode(~s({"type":"leave","ref":"2","topic":"t"}))

    assert {:ok, {:request, "3", "t", %{limit: 7}}} =
             Protocol.decode(
               ~s({"type":"request","ref":"3","topic":"t","op":"list_items","params":{"limit":7}})
             )
  end

  test "malformed messages become errors with the ref when there is one" do
    assert {:error, nil, :invalid_json} = Protocol.decode("{nope")
    assert {:error, nil, :not_an_object} = Protocol.decode("[1]")
    assert {:error, "9", :unknown_type} = Protocol.decode(~s({"type":"dance","ref":"9"}))
    assert {:error, "9", :missing_field} = Protocol.decode(~s({"type":"join","ref":"9"}))
    assert {:error, "9", :unknown_op} = Protocol.decode(~s({"type":"request","ref":"9","op":"x"}))

    assert {:error, "9", :bad_params} =
             Protocol.decode(
               ~s({"type":"request","ref":"9","topic":"t","op":"list_items","params":{"limit":101}})
             )

    assert {:error, "9", :bad_topic} = Protocol.decode(~s({"type":"join","ref":"9","topic":""}))
  end

  test "a reply is the JSON jiffy writes, as iodata that places each plain string as given" do
    source = String.duplicate("abcdefgh", 32)
    summary = binary_part(source, 8, 80)

    items = [%{"id" => 7, "summary" => summary, "changed" => true, "quote" => ~s(say "hi"\n)}]
    reply = Protocol.reply("2", "t", items)

    assert :jiffy.decode(IO.iodata_to_binary(reply), [:return_maps]) ==
             :jiffy.decode(
               :jiffy.encode(%{
                 "type" => "reply",
                 "ref" => "2",
                 "topic" => "t",
                 "status" => "ok",
                 "items" => items
               }),
               [:return_maps]
             )

    # Placed, not copied, as Poison's and Jason's `encode_to_iodata!` place a string
    # that needs no escaping.
    assert Enum.any?(
             leaves(reply),
             &(&1 === summary and
                 :binary.referenced_byte_size(&1) == :binary.referenced_byte_size(summary))
           )
  end

  defp leaves(iodata) when is_list(iodata), do: Enum.flat_map(iodata, &leaves/1)
  defp leaves(leaf), do: [leaf]

  test "an error without a ref carries a JSON null, not the string \"nil\"" do
    json = IO.iodata_to_binary(Protocol.error(nil, :invalid_json))
    assert %{"ref" => :null, "reason" => "invalid_json"} = :jiffy.decode(json, [:return_maps])
    assert %{"ref" => "4"} = :jiffy.decode(Protocol.error("4", :not_joined), [:return_maps])
  end
end
