// CSVDataset: CSV files with int64, float32 or string columns (string by default, as MindSpore).
// Every file is parsed once at construction into one typed array per column, so a malformed line
// fails at once with its file, line and column, and rows are cheap copies afterwards.
#include <charconv>
#include <cstring>

#include "mycel/data/source.h"
#include "mycel/data/sources/file_io.h"
#include "mycel/data/string_tensor.h"
#include "mycel/data/transform.h"  // MYCEL_REGISTER_DATA

namespace mycel::data {
namespace {

constexpr const char* kOwner = "CSVDataset";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits one line into fields; a field may be double-quoted with "" for a literal quote.
// Returns false on an unterminated quote.
bool split_line(std::string_view line, char delim, std::vector<std::string>& out) {
  out.clear();
  size_t i = 0;
  for (;;) {
    std::string field;
    std::string_view rest = trim(line.substr(i));
    if (!rest.empty() && rest.front() == '"') {
      i = static_cast<size_t>(rest.data() - line.data()) + 1;
      for (;;) {
        if (i >= line.size()) return false;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      size_t next = line.find(delim, i);
      i = next == std::string_view::npos ? line.size() : next;  // text after the quote is ignored
    } else {
      size_t next = line.find(delim, i);
      size_t end = next == std::string_view::npos ? line.size() : next;
      field = std::string(line.substr(i, end - i));
      i = end;
    }
    out.push_back(std::move(field));
    if (i >= line.size()) return true;
    ++i;  // skip the delimiter; a trailing delimiter makes one more (empty) field
    if (i == line.size()) {
      out.emplace_back();
      return true;
    }
  }
}

struct Column {
  explicit Column(std::string n, DType t = DType::float32, bool is_text = false)
      : name(std::move(n)), dtype(t), text(is_text) {}
  std::string name;
  DType dtype = DType::float32;
  bool text = false;  // a string column: fields kept as text in strs
  bool has_default = false;
  int64_t int_default = 0;
  float float_default = 0;
  std::string str_default;
  std::vector<uint8_t> data;  // size() * itemsize(dtype) bytes
  std::vector<std::string> strs;
};

// Parses text as the column's type; returns false when it is not a number of that type.
bool parse_value(std::string_view text, Column& c) {
  if (c.text) {  // any text is a string; an empty field takes the default (or stays empty)
    c.strs.emplace_back(text.empty() && c.has_default ? std::string_view(c.str_default) : text);
    return true;
  }
  text = trim(text);
  const char* b = text.data();
  const char* e = b + text.size();
  if (text.empty()) {
    if (!c.has_default) return false;
    if (c.dtype == DType::int64) {
      c.data.insert(c.data.end(), reinterpret_cast<uint8_t*>(&c.int_default),
                    reinterpret_cast<uint8_t*>(&c.int_default) + 8);
    } else {
      c.data.insert(c.data.end(), reinterpret_cast<uint8_t*>(&c.float_default),
                    reinterpret_cast<uint8_t*>(&c.float_default) + 4);
    }
    return true;
  }
  if (*b == '+') ++b;  // from_chars rejects a leading '+'
  if (c.dtype == DType::int64) {
    int64_t v;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) return false;
    c.data.insert(c.data.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8);
  } else {
    float v;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) return false;
    c.data.insert(c.data.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
  }
  return true;
}

class CsvSource : public Source {
 public:
  explicit CsvSource(const Params& p) {
    std::vector<std::string> files = p.get_strs("dataset_files");
    MYCEL_CHECK(!files.empty(), ValueError, "[", kOwner, "] dataset_files is empty");
    std::string delim = p.get_str("field_delim", ",");
    MYCEL_CHECK(delim.size() == 1 && delim != "\"" && delim != "\n" && delim != "\r", ValueError,
                "[", kOwner,
                "] field_delim must be one character other than '\"' and newline, got '", delim,
                "'");
    std::vector<std::string> names = p.get_strs("column_names", std::vector<std::string>{});
    std::vector<std::string> types = p.get_strs("column_types", std::vector<std::string>{});
    std::vector<std::string> defaults = p.get_strs("column_defaults", std::vector<std::string>{});
    bool header = names.empty();
    for (const std::string& n : names) columns_.push_back(Column(n, DType::uint8, true));
    types_ = types;
    defaults_ = defaults;
    for (const std::string& f : files) parse_file(f, delim[0], header);
    if (columns_.empty())
      MYCEL_THROW(ValueError, "[", kOwner, "] no columns: '", files[0], "' is empty");
    if (!columns_ready_) set_up_columns(files[0]);  // header only: still check the defaults
    for (size_t a = 0; a < columns_.size(); ++a)
      for (size_t b = a + 1; b < columns_.size(); ++b)
        MYCEL_CHECK(columns_[a].name != columns_[b].name, ValueError, "[", kOwner,
                    "] duplicate column name '", columns_[a].name, "'");
  }

  std::vector<std::string> column_names() const override {
    std::vector<std::string> out;
    for (const Column& c : columns_) out.push_back(c.name);
    return out;
  }
  int64_t size() const override { return rows_; }

  Row get(int64_t i) const override {
    MYCEL_CHECK(i >= 0 && i < rows_, IndexError, "[", kOwner, "] row ", i, " out of range [0, ",
                rows_, ")");
    Row row;
    for (const Column& c : columns_) {
      // Shape (1,) like MindSpore's CSV rows.
      if (c.text) {
        row.push_back(make_string_tensor({c.strs[static_cast<size_t>(i)]}, {1}, StringKind::text));
        continue;
      }
      Tensor t = Tensor::empty({1}, c.dtype);
      size_t n = itemsize(c.dtype);
      std::memcpy(t.data(), c.data.data() + static_cast<size_t>(i) * n, n);
      row.push_back(t);
    }
    return row;
  }

 private:
  // Fixes column types and defaults once the column count is known (from names or a header).
  void set_up_columns(const std::string& file) {
    if (!types_.empty() && types_.size() != columns_.size())
      MYCEL_THROW(ValueError, "[", kOwner, "] column_defaults has ", types_.size(),
                  " entries but '", file, "' has ", columns_.size(), " columns");
    for (size_t k = 0; k < columns_.size(); ++k) {
      Column& c = columns_[k];
      if (types_.empty()) continue;  // no column_defaults: every column is a string
      c.text = false;
      if (types_[k] == "int64")
        c.dtype = DType::int64;
      else if (types_[k] == "float32")
        c.dtype = DType::float32;
      else if (types_[k] == "string")
        c.text = true;
      else
        MYCEL_THROW(TypeError, "[", kOwner, "] column type '", types_[k], "' not supported");
      if (k < defaults_.size() && c.text) {
        c.has_default = true;
        c.str_default = defaults_[k];
      } else if (k < defaults_.size()) {
        Column probe(c.name, c.dtype);
        if (!parse_value(defaults_[k], probe))
          MYCEL_THROW(ValueError, "[", kOwner, "] default '", defaults_[k], "' of column '", c.name,
                      "' is not a ", dtype_name(c.dtype));
        c.has_default = true;
        if (c.dtype == DType::int64)
          std::memcpy(&c.int_default, probe.data.data(), 8);
        else
          std::memcpy(&c.float_default, probe.data.data(), 4);
      }
    }
    columns_ready_ = true;
  }

  void parse_file(const std::string& path, char delim, bool header) {
    std::vector<uint8_t> bytes = io::read_file(path, kOwner);
    std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte-order mark
    std::vector<std::string> fields;
    bool need_header = header;
    size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (trim(line).empty()) continue;
      if (!split_line(line, delim, fields))
        MYCEL_THROW(ValueError, "[", kOwner, "] file '", path, "', line ", line_no,
                    ": unterminated quoted field");
      if (need_header) {
        need_header = false;
        if (columns_.empty()) {
          for (std::string& f : fields)
            columns_.push_back(Column(std::string(trim(f)), DType::uint8, true));
        } else {
          bool same = fields.size() == columns_.size();
          for (size_t k = 0; same && k < fields.size(); ++k)
            same = trim(fields[k]) == columns_[k].name;
          if (!same)
            MYCEL_THROW(ValueError, "[", kOwner, "] file '", path, "' has header '", line,
                        "', which differs from the first file's");
        }
        continue;
      }
      if (!columns_ready_) set_up_columns(path);
      if (fields.size() != columns_.size())
        MYCEL_THROW(ValueError, "[", kOwner, "] file '", path, "', line ", line_no, ": ",
                    fields.size(), " fields, expected ", columns_.size());
      for (size_t k = 0; k < fields.size(); ++k) {
        Column& c = columns_[k];
        if (!parse_value(fields[k], c)) {
          Column as_float(c.name, DType::float32);  // a number of the wrong kind, or text?
          as_float.text = false;
          bool numeric = parse_value(fields[k], as_float);
          MYCEL_THROW(ValueError, "[", kOwner, "] file '", path, "', line ", line_no, ", column '",
                      c.name, "' (", k + 1, "): '", fields[k], "' is not ",
                      trim(fields[k]).empty()
                          ? "allowed: the field is empty and the column has no default"
                          : std::string("a valid ") + dtype_name(c.dtype),
                      numeric ? "" : " (give a str in column_defaults for a string column)");
        }
      }
      ++rows_;
    }
    if (need_header && columns_.empty())
      MYCEL_THROW(ValueError, "[", kOwner, "] file '", path, "' is empty: no header line");
  }

  std::vector<Column> columns_;
  std::vector<std::string> types_, defaults_;
  bool columns_ready_ = false;
  int64_t rows_ = 0;
};

}  // namespace

MYCEL_REGISTER_DATA(csv_source) {
  register_source(kOwner, [](const Params& p) { return std::make_shared<CsvSource>(p); });
}

}  // namespace mycel::data
