// TableRef names one message table: a keyspace (MySQL database) and a table
// name. An empty keyspace means the server's default keyspace.
//
// Constructible implicitly from a bare table name so that call sites stay
// short; pass both parts to address another keyspace.
//
// Example:
//   client->Ack("orders", ids);              // default keyspace
//   client->Ack({"shop", "orders"}, ids);    // keyspace "shop"
//
// A plain value type; thread-compatible.
#ifndef MSGQ_TABLE_REF_H_
#define MSGQ_TABLE_REF_H_

#include <string>
#include <utility>

namespace msgq {

struct TableRef {
  TableRef(const char* name) : name(name) {}  // NOLINT(runtime/explicit)
  TableRef(std::string name) : name(std::move(name)) {}  // NOLINT
  TableRef(std::string keyspace, std::string name)
      : keyspace(std::move(keyspace)), name(std::move(name)) {}

  // "keyspace.name", or just "name" when the keyspace is the default one.
  std::string ToString() const {
    return keyspace.empty() ? name : keyspace + "." + name;
  }

  std::string keyspace;
  std::string name;
};

}  // namespace msgq

#endif  // MSGQ_TABLE_REF_H_
